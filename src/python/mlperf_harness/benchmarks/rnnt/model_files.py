"""An RNN-T model directory as this harness runs it: the three ONNX graphs (onnx_graphs.py) that the
CPU runs, the same weights under the reference's names (`weights.npz`: what the GPU's torch engine
reads, torch_engine.py) and `rnnt.json` (the sizes, whether it is a stand-in).

    <dir>/encoder.onnx  <dir>/prediction.onnx  <dir>/joint.onnx  <dir>/weights.npz  <dir>/rnnt.json

The published PyTorch checkpoint becomes one with `convert_checkpoint` (checkpoint.py); anything
else is refused in one line."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from mlperf_harness.atomic import write_bytes_atomic, write_json_atomic
from mlperf_harness.benchmarks.rnnt.onnx_graphs import ENCODER, JOINT, PREDICTION
from mlperf_harness.benchmarks.rnnt.topology import RnntSizes, sizes_of
from mlperf_harness.benchmarks.rnnt.weights import Weights
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

DESCRIPTION = "rnnt.json"
WEIGHTS_FILE = "weights.npz"
PARTS = (ENCODER, PREDICTION, JOINT)


@dataclass(frozen=True)
class RnntModelFiles:
    directory: Path
    sizes: RnntSizes
    stand_in: bool
    sha256: str  # of the three graphs' sha256s, in PARTS order

    def graphs(self) -> dict[str, Path]:
        return {part: self.directory / f"{part}.onnx" for part in PARTS}

    @property
    def weights_file(self) -> Path:
        return self.directory / WEIGHTS_FILE

    def weights(self) -> Weights:
        """The weights under the reference's names, checked against the topology (one line
        when absent or of another layout)."""
        path = self.weights_file
        if not path.is_file():
            raise HarnessError(
                f"the RNN-T model directory {self.directory} lacks {WEIGHTS_FILE} (written by an "
                "older build): rebuild it (delete the directory; download_model -- --convert for "
                "the checkpoint's)"
            )
        try:
            with np.load(path, allow_pickle=False) as archive:
                weights = {name: archive[name].astype(np.float32) for name in archive.files}
        except (OSError, ValueError) as error:
            raise HarnessError(f"{path} is damaged: {error}") from None
        sizes = sizes_of({name: tuple(value.shape) for name, value in weights.items()}, str(path))
        if sizes != self.sizes:
            raise HarnessError(f"{path} holds an RNN-T of {sizes}, {DESCRIPTION} says {self.sizes}")
        return weights

    @staticmethod
    def read(directory: Path) -> RnntModelFiles:
        description = directory / DESCRIPTION
        if not description.is_file():
            hint = (
                " (the published rnnt.pt checkpoint: convert it with "
                "`pants run benchmarks/rnnt:download_model -- --convert`)"
                if directory.suffix == ".pt" or directory.is_file()
                else ""
            )
            raise HarnessError(
                f"{directory} is not an RNN-T model directory: it lacks {DESCRIPTION} and the "
                f"three graphs encoder.onnx, prediction.onnx, joint.onnx{hint}"
            )
        try:
            record = json.loads(description.read_text(encoding="utf-8"))
            sizes = RnntSizes(**record["sizes"])
            stand_in = bool(record["stand_in"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise HarnessError(f"{description} is damaged: {error}") from None
        missing = [
            p.name for p in (directory / f"{part}.onnx" for part in PARTS) if not p.is_file()
        ]
        if missing:
            raise HarnessError(f"the RNN-T model directory {directory} lacks {', '.join(missing)}")
        digest = hashlib.sha256()
        for part in PARTS:
            digest.update(file_sha256(directory / f"{part}.onnx").encode())
        return RnntModelFiles(directory, sizes, stand_in, digest.hexdigest())


def write_model_files(
    directory: Path,
    models: Mapping[str, onnx.ModelProto],
    weights: Weights,
    sizes: RnntSizes,
    stand_in: bool,
    note: str,
) -> RnntModelFiles:
    """The graphs and weights first, rnnt.json last: a directory without rnnt.json is never read
    as a model."""
    (directory / DESCRIPTION).unlink(missing_ok=True)
    for part in PARTS:
        write_bytes_atomic(directory / f"{part}.onnx", models[part].SerializeToString())
    archive = io.BytesIO()
    np.savez(archive, **weights)
    write_bytes_atomic(directory / WEIGHTS_FILE, archive.getvalue())
    write_json_atomic(
        directory / DESCRIPTION,
        {"sizes": dataclasses.asdict(sizes), "stand_in": stand_in, "note": note},
    )
    return RnntModelFiles.read(directory)
