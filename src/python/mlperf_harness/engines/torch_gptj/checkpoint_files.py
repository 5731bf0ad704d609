"""Which files of a Hugging Face GPT-J checkpoint hold which tensors, checked against GPT-J's layout
before any weight is read (no torch here: the CPU build checks a checkpoint too).

A checkpoint directory holds its weights in one of Hugging Face's layouts:

- `pytorch_model.bin.index.json` with its shards (MLCommons' checkpoint: three
  `pytorch_model-0000N-of-00003.bin`), or one `pytorch_model.bin`: torch's zip pickle format, read
  by torch alone;
- `model.safetensors.index.json` with its shards, or one `model.safetensors`: an 8-byte
  little-endian header length, a JSON header (each tensor's dtype, shape and byte range), the raw
  bytes. The header is read here; the tensors are read with the `safetensors` package, which the loader asks
  for when it is missing.

An index is {"metadata": {...}, "weight_map": {tensor name: shard file name}}. The checks, each one
line: the index is that shape; every shard it names is a plain file name present in the directory;
the names (and, for safetensors, the shapes) are GPT-J's at config.json's size
(`checkpoint_layout`). Where both layouts are present, safetensors is used if the package is there.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.gptj.checkpoint_layout import (
    check_names,
    check_shapes,
    shape_from_config,
)
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape
from mlperf_harness.errors import HarnessError

PYTORCH, SAFETENSORS = "pytorch", "safetensors"
# Each format's single file and its index, as transformers names them.
FILES = {
    SAFETENSORS: ("model.safetensors", "model.safetensors.index.json"),
    PYTORCH: ("pytorch_model.bin", "pytorch_model.bin.index.json"),
}
_HEADER_LIMIT = 100 << 20  # a safetensors header is JSON: anything near this is not one


@dataclass(frozen=True)
class CheckpointFiles:
    """A checked checkpoint: its shape, its weights' format and which tensors each shard holds."""

    directory: Path
    shape: GptjShape
    format: str  # PYTORCH or SAFETENSORS
    shards: Mapping[Path, tuple[str, ...]]  # in the index's order of first appearance


def check_checkpoint(directory: Path) -> CheckpointFiles:
    """The checkpoint in `directory`, checked as far as it can be without reading its weights."""
    if not directory.is_dir():
        raise HarnessError(f"GPT-J checkpoint directory not found: {directory}")
    shape = shape_from_config(directory)
    fmt = _weights_format(directory)
    single, index = FILES[fmt]
    if (directory / index).is_file():
        shards = read_index(directory / index)
    else:
        shards = {directory / single: ()}  # names: from the file itself
    source = f"GPT-J checkpoint {directory}"
    if fmt == SAFETENSORS:
        shapes: dict[str, tuple[int, ...]] = {}
        for shard, names in shards.items():
            header = safetensors_shapes(shard)
            missing = sorted(set(names) - set(header))
            if missing:
                raise HarnessError(
                    f"{shard} lacks {missing[0]}, which its index places there"
                    + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                )
            shapes.update(header)
        shards = {
            shard: names or tuple(safetensors_shapes(shard)) for shard, names in shards.items()
        }
        check_shapes(shapes, shape, source)
    elif any(shards.values()):
        check_names([name for names in shards.values() for name in names], shape, source)
    return CheckpointFiles(directory, shape, fmt, shards)


def safetensors_available() -> bool:
    return importlib.util.find_spec("safetensors") is not None


def _weights_format(directory: Path) -> str:
    present = {
        fmt: any((directory / name).is_file() for name in names) for fmt, names in FILES.items()
    }
    # Checked without the safetensors package (the header is JSON); the loader needs it.
    if present[SAFETENSORS] and (safetensors_available() or not present[PYTORCH]):
        return SAFETENSORS
    if present[PYTORCH]:
        return PYTORCH
    wanted = " or ".join(
        f"{single} (or {index} with its shards)" for single, index in FILES.values()
    )
    raise HarnessError(f"no GPT-J weights in {directory}: it needs {wanted}")


def read_index(path: Path) -> dict[Path, tuple[str, ...]]:
    """A shard index: each shard's path and the tensors it holds; every shard must be there."""
    try:
        document = json.loads(path.read_bytes())
    except OSError as error:
        raise HarnessError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise HarnessError(f"{path} is not JSON: {error}") from error
    weight_map = document.get("weight_map") if isinstance(document, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise HarnessError(f"{path} is not a shard index: no weight_map of tensor -> shard file")
    shards: dict[Path, list[str]] = {}
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or not shard or Path(shard).name != shard:
            raise HarnessError(f"{path}: tensor {name} names {shard!r}, not a file beside it")
        shards.setdefault(path.parent / shard, []).append(name)
    for shard in shards:
        if not shard.is_file():
            raise HarnessError(
                f"{path} places tensors in {shard.name}, which is not in {path.parent}: an "
                "incomplete download? (download_model fetches every file)"
            )
    return {shard: tuple(names) for shard, names in shards.items()}


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape from a safetensors file's header (the bytes are not read)."""
    try:
        with path.open("rb") as stream:
            size_bytes = stream.read(8)
            if len(size_bytes) < 8:
                raise HarnessError(f"{path} is not a safetensors file: shorter than its header")
            (size,) = struct.unpack("<Q", size_bytes)
            if size > _HEADER_LIMIT:
                raise HarnessError(f"{path} is not a safetensors file: header of {size} bytes")
            raw = stream.read(size)
            data_start = 8 + size
            file_size = path.stat().st_size
    except OSError as error:
        raise HarnessError(f"cannot read {path}: {error.strerror or error}") from error
    try:
        header: Any = json.loads(raw)
    except ValueError as error:
        raise HarnessError(f"{path} is not a safetensors file: its header is not JSON") from error
    if len(raw) < size or not isinstance(header, dict):
        raise HarnessError(f"{path} is not a safetensors file: truncated or malformed header")
    shapes: dict[str, tuple[int, ...]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if (
            not isinstance(shape, list)
            or not all(isinstance(d, int) and d >= 0 for d in shape)
            or not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) for o in offsets)
        ):
            raise HarnessError(f"{path}: tensor {name}'s header entry is malformed")
        if not 0 <= offsets[0] <= offsets[1] or data_start + offsets[1] > file_size:
            raise HarnessError(
                f"{path}: tensor {name}'s bytes lie past the end of the file (truncated?)"
            )
        shapes[name] = tuple(shape)
    return shapes
