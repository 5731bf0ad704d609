"""INT8 calibration for TensorRT: an entropy calibrator (IInt8EntropyCalibrator2, as NVIDIA's
ResNet-50 uses) fed from a CalibrationSet, and its cache file, an artifact of its own.

TensorRT calibrates an explicit-batch network at the calibration profile's shape, so every batch has
exactly CALIBRATION_BATCH images: the last one is padded with images from the start of the set. The
calibration cache is keyed by what decides the scales (model, calibration images, method, batch,
TensorRT version), not by the engine's batch size, precision flags or workspace: engines rebuilt for
those reasons reuse it and are not calibrated again.

The TensorRT class is defined inside `make_entropy_calibrator`, so `tensorrt` is imported only when
an int8 engine is built; everything else here is plain Python, tested without TensorRT.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.backends.tensorrt.cuda import Cuda
from mlperf_harness.backends.tensorrt.libraries import import_tensorrt
from mlperf_harness.engines.calibration import CalibrationSet
from mlperf_harness.errors import HarnessError

CALIBRATION_METHOD = "entropy2"  # TensorRT's IInt8EntropyCalibrator2
CALIBRATION_BATCH = 10  # images per calibration batch: the calibration profile's batch dimension


def padded_batch_indices(count: int, batch_size: int) -> list[list[int]]:
    """Which images make each calibration batch: consecutive runs of `batch_size`, the last one
    filled up with images from the start of the set (again from the start if the set is smaller)."""
    if count < 1 or batch_size < 1:
        raise HarnessError(f"cannot batch {count} calibration images by {batch_size}")
    batches = -(-count // batch_size)
    return [
        [(start + i) % count for i in range(batch_size)]
        for start in range(0, batches * batch_size, batch_size)
    ]


def fixed_size_batches(
    batches: Sequence[npt.NDArray[np.float32]], batch_size: int
) -> list[npt.NDArray[np.float32]]:
    """The same images, in order, recut into contiguous batches of exactly `batch_size`."""
    images = [image for batch in batches for image in batch]
    return [
        np.ascontiguousarray(np.stack([images[i] for i in indices]))
        for indices in padded_batch_indices(len(images), batch_size)
    ]


def calibration_cache_key(model_sha256: str, calibration_sha256: str, tensorrt_version: str) -> str:
    identity = ":".join(
        (
            model_sha256,
            calibration_sha256,
            CALIBRATION_METHOD,
            f"batch{CALIBRATION_BATCH}",
            f"tensorrt{tensorrt_version}",
        )
    )
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def calibration_cache_path(cache_root: Path, benchmark: str, key: str) -> Path:
    """Beside the onnxruntime calibration artifacts, in the engine cache root."""
    return cache_root / "calibration" / benchmark / f"tensorrt-{key}.cache"


def make_entropy_calibrator(
    calibration: CalibrationSet, cache_file: Path, input_shape: Sequence[int]
) -> Any:
    """An IInt8EntropyCalibrator2 that reads `cache_file` when it holds scales, and otherwise feeds
    `calibration`'s images (preprocessed only then) in batches of `input_shape` (the calibration
    profile's shape) and writes the scales TensorRT computes to `cache_file`.

    TensorRT calls these methods from C++, where a Python exception cannot pass: a failure is kept
    in `error` (calibration then ends), and the builder raises it after the build returns.
    """
    trt = import_tensorrt()
    cuda = Cuda()
    shape = tuple(int(dim) for dim in input_shape)

    base: Any = trt.IInt8EntropyCalibrator2

    class EntropyCalibrator(base):  # type: ignore[misc]
        def __init__(self) -> None:
            # pybind11 needs the base initialised explicitly, or TensorRT's calls crash.
            base.__init__(self)
            self.error: str | None = None
            self.batches_fed = 0
            self._batches: list[npt.NDArray[np.float32]] | None = None
            self._device = 0

        def get_batch_size(self) -> int:
            # Ignored for explicit-batch networks (all of TensorRT 10's): the batch is the first
            # dimension of the calibration profile's shape.
            return 1

        def get_batch(self, names: Sequence[str]) -> list[int] | None:
            try:
                if len(names) != 1:
                    raise HarnessError(f"the calibrator feeds one input, the network has {names}")
                if self._batches is None:
                    print(
                        f"generate_engines: calibrating on {len(calibration.files)} images "
                        f"({calibration.description})",
                        file=sys.stderr,
                    )
                    self._batches = fixed_size_batches(calibration.batches(shape[0]), shape[0])
                    self._device = cuda.malloc(self._batches[0].nbytes)
                if self.batches_fed >= len(self._batches):
                    return None
                batch = self._batches[self.batches_fed]
                if batch.shape != shape or batch.dtype != np.float32:
                    raise HarnessError(
                        f"calibration batch {batch.dtype} {batch.shape} does not fit the network's "
                        f"input {shape} (float32)"
                    )
                cuda.copy_to_device(self._device, batch)
                self.batches_fed += 1
                return [self._device]
            except Exception as error:  # kept for the builder (see above)
                self.error = f"int8 calibration failed: {error}"
                return None

        def read_calibration_cache(self) -> bytes | None:
            try:
                data = cache_file.read_bytes() if cache_file.is_file() else b""
            except OSError as error:
                print(f"generate_engines: ignoring {cache_file}: {error}", file=sys.stderr)
                return None
            if not data:
                return None
            print(f"generate_engines: int8 scales from {cache_file}", file=sys.stderr)
            return data

        def write_calibration_cache(self, cache: Any) -> None:
            try:
                write_bytes_atomic(cache_file, bytes(cache))
            except Exception as error:  # kept for the builder (see above)
                self.error = f"cannot write the calibration cache {cache_file}: {error}"

        def free(self) -> None:
            """Release the device buffer and the preprocessed images (after the build)."""
            device, self._device, self._batches = self._device, 0, None
            if device:
                cuda.free(device)

    return EntropyCalibrator()
