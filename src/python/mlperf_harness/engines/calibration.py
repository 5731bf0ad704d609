"""Calibration samples for INT8 engines, and the hash that makes them part of an engine's key.

`Calibration` is what an engine builder needs of any benchmark's calibration data: a hash and the
samples as the model's named inputs. `CalibrationSet` is the image one (ResNet-50's ImageNet
transform by default, RetinaNet's OpenImages one); BERT's holds SQuAD features
(benchmarks/bert/calibration.py).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.imagenet.transform import preprocess_file
from mlperf_harness.errors import HarnessError

Feed = dict[str, npt.NDArray[np.generic]]  # one batch, by the model's input names
Preprocess = Callable[[Path], npt.NDArray[np.float32]]  # an image file -> the model's input


class Calibration(Protocol):
    """The samples INT8 calibration sees, in a fixed order."""

    @property
    def description(self) -> str:
        """Where they come from, for build messages ("MLPerf calibration list option 1")."""

    @property
    def sha256(self) -> str:
        """Changes whenever what calibration sees changes: part of the engine's key."""

    def feeds(self, batch_size: int, input_names: Sequence[str]) -> list[Feed]:
        """The samples in batches, as the model's inputs (named as the model names them)."""


@dataclass(frozen=True)
class CalibrationSet:
    """The images INT8 calibration sees, in a fixed order, and the benchmark's transform."""

    image_dir: Path
    files: tuple[str, ...]
    description: str
    preprocess: Preprocess = preprocess_file

    @property
    def sha256(self) -> str:
        """Names and bytes of every image, and the transform's source: a changed file, list or
        transform changes what calibration sees."""
        digest = hashlib.sha256()
        module = inspect.getmodule(self.preprocess)
        digest.update(inspect.getsource(module if module is not None else self.preprocess).encode())
        for name in self.files:
            digest.update(name.encode() + b"\0")
            digest.update(hashlib.sha256((self.image_dir / name).read_bytes()).digest())
        return digest.hexdigest()

    def batches(self, batch_size: int) -> list[npt.NDArray[np.float32]]:
        """The preprocessed images (the benchmark's reference transform), in batches."""
        images = [self.preprocess(self.image_dir / name) for name in self.files]
        return [np.stack(images[i : i + batch_size]) for i in range(0, len(images), batch_size)]

    def feeds(self, batch_size: int, input_names: Sequence[str]) -> list[Feed]:
        """The image batches as the model's one input."""
        if len(input_names) != 1:
            raise HarnessError(f"image calibration feeds one input, not {', '.join(input_names)}")
        return [{input_names[0]: batch} for batch in self.batches(batch_size)]


def calibration_from_list(
    image_dir: Path, list_file: Path, description: str, preprocess: Preprocess = preprocess_file
) -> CalibrationSet:
    """A calibration set named by a list file (one image name per line, as MLPerf publishes)."""
    if not list_file.is_file():
        raise HarnessError(f"calibration list not found: {list_file}")
    names = [line.split()[0] for line in list_file.read_text().splitlines() if line.strip()]
    return calibration_from_names(image_dir, names, description, preprocess)


def calibration_from_names(
    image_dir: Path,
    names: Sequence[str],
    description: str,
    preprocess: Preprocess = preprocess_file,
) -> CalibrationSet:
    if not names:
        raise HarnessError(f"empty calibration set in {image_dir}")
    missing = [name for name in names if not (image_dir / name).is_file()]
    if missing:
        raise HarnessError(
            f"{len(missing)} calibration images missing in {image_dir} (first: {missing[0]})"
        )
    return CalibrationSet(image_dir, tuple(names), description, preprocess)
