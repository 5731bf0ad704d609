"""An RNN-T model directory as this harness runs it: the three ONNX graphs (onnx_graphs.py) and
`rnnt.json` (the sizes, whether it is a stand-in, the sha256 of each graph).

    <dir>/encoder.onnx  <dir>/prediction.onnx  <dir>/joint.onnx  <dir>/rnnt.json

The published PyTorch checkpoint becomes one with `convert_checkpoint` (checkpoint.py); anything
else is refused in one line."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import onnx

from mlperf_harness.atomic import write_bytes_atomic, write_json_atomic
from mlperf_harness.benchmarks.rnnt.onnx_graphs import ENCODER, JOINT, PREDICTION
from mlperf_harness.benchmarks.rnnt.topology import RnntSizes
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

DESCRIPTION = "rnnt.json"
PARTS = (ENCODER, PREDICTION, JOINT)


@dataclass(frozen=True)
class RnntModelFiles:
    directory: Path
    sizes: RnntSizes
    stand_in: bool
    sha256: str  # of the three graphs' sha256s, in PARTS order

    def graphs(self) -> dict[str, Path]:
        return {part: self.directory / f"{part}.onnx" for part in PARTS}

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
    sizes: RnntSizes,
    stand_in: bool,
    note: str,
) -> RnntModelFiles:
    """The graphs first, rnnt.json last: a directory without rnnt.json is never read as a model."""
    (directory / DESCRIPTION).unlink(missing_ok=True)
    for part in PARTS:
        write_bytes_atomic(directory / f"{part}.onnx", models[part].SerializeToString())
    write_json_atomic(
        directory / DESCRIPTION,
        {"sizes": dataclasses.asdict(sizes), "stand_in": stand_in, "note": note},
    )
    return RnntModelFiles.read(directory)
