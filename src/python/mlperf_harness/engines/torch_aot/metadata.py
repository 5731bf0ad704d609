"""What a torch engine's runner must know besides the package: written beside it at build time.

The AOTInductor package holds the compiled code and the weights; this record holds the interface
(input shape with the compiled batch, output names in the order the package returns them) and what
the package is tied to (torch version, GPU), so that the runner can refuse a package that would not
load, or would load and mislead, with a message instead of a C++ error.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.errors import HarnessError

IO_FILE_SUFFIX = ".io.json"
IO_VERSION = 1


@dataclass(frozen=True)
class EngineIO:
    input_name: str
    input_shape: tuple[int, ...]  # first dimension: the compiled batch size
    input_dtype: str  # numpy dtype name the runner feeds (the ONNX model's input type)
    output_names: tuple[str, ...]  # in the order the package returns them
    output_dtypes: tuple[str, ...]  # numpy dtype names
    precision: str  # fp32, fp16 or bf16: what the engine computes in
    channels_last: bool
    torch_version: str
    device: str  # GPU name and compute capability, as in the engine spec

    @property
    def batch_size(self) -> int:
        return self.input_shape[0]

    def output_index(self, name: str | None) -> int:
        """Which package output a runner returns: `name`, or the first output for None."""
        if name is None:
            return 0
        if name not in self.output_names:
            raise HarnessError(
                f"the torch engine has no output {name!r} (it has {', '.join(self.output_names)})"
            )
        return self.output_names.index(name)

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["io_version"] = IO_VERSION
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> EngineIO:
        if record.get("io_version") != IO_VERSION:
            raise HarnessError(
                f"torch engine record of another version ({record.get('io_version')})"
            )
        return cls(
            input_name=str(record["input_name"]),
            input_shape=tuple(int(d) for d in record["input_shape"]),
            input_dtype=str(record["input_dtype"]),
            output_names=tuple(str(n) for n in record["output_names"]),
            output_dtypes=tuple(str(d) for d in record["output_dtypes"]),
            precision=str(record["precision"]),
            channels_last=bool(record["channels_last"]),
            torch_version=str(record["torch_version"]),
            device=str(record["device"]),
        )


def io_path(engine_path: Path) -> Path:
    return engine_path.with_name(engine_path.stem + IO_FILE_SUFFIX)


def write_io(engine_path: Path, io: EngineIO) -> None:
    write_json_atomic(io_path(engine_path), io.to_json())


def read_io(engine_path: Path) -> EngineIO:
    path = io_path(engine_path)
    try:
        return EngineIO.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(
            f"torch engine {engine_path} has no readable {path.name} ({error}); "
            "rebuild it with generate_engines"
        ) from error
