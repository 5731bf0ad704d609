"""Tensors from files that `torch.save` wrote, read into numpy without torch (which is no CI
dependency here): MLCommons' `latents.pt`, pytorch-fid's Inception weights, open_clip's
checkpoints.

Both of torch.save's formats are read: the zip archive (torch 1.6 and later: `<name>/data.pkl`
whose persistent ids name storages stored as `<name>/data/<key>`), and the legacy stream (a magic
number, the protocol version and system info pickled, the object's pickle, the list of storage keys
pickled, then each storage as an 8-byte element count and its bytes). Tensors are rebuilt from
(storage, offset, size, stride) as `torch._utils._rebuild_tensor_v2` rebuilds them; only plain
containers, tensors and numbers are allowed in the pickle: anything else is refused in one line.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_DTYPES = {
    "FloatStorage": np.float32,
    "HalfStorage": np.float16,
    "DoubleStorage": np.float64,
    "BFloat16Storage": np.uint16,  # raw bits; widened below
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


@dataclass(frozen=True)
class _StorageType:
    name: str


@dataclass
class _Storage:
    key: str
    dtype: Any
    data: npt.NDArray[Any] | None = None


def _rebuild_tensor(
    storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...], *_: Any
) -> npt.NDArray[Any]:
    if storage.data is None:
        raise HarnessError(f"torch file: storage {storage.key} has no data")
    flat = storage.data
    itemsize = flat.itemsize
    if not size:
        return np.array(flat[offset])
    view = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=size, strides=tuple(s * itemsize for s in stride)
    )
    array = np.ascontiguousarray(view)
    if storage.dtype == "bfloat16":
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _rebuild_parameter(data: Any, *_: Any) -> Any:
    return data


_REBUILDS = {("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor")}
_ALLOWED: dict[tuple[str, str], Callable[..., Any] | type] = {
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
}


class _Unpickler(pickle.Unpickler):
    def __init__(
        self,
        stream: io.BytesIO,
        storages: dict[str, _Storage],
        source: Path,
        rebuild: Callable[..., Any],
    ) -> None:
        super().__init__(stream)
        self._storages = storages
        self._source = source
        self._rebuild = rebuild

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch" and name in _DTYPES:
            return _StorageType(name)
        if (module, name) in _REBUILDS:
            return self._rebuild
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        raise HarnessError(
            f"{self._source} is not a plain tensor file: its pickle needs {module}.{name}"
        )

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise HarnessError(f"{self._source}: unknown persistent id {pid!r:.60}")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, _StorageType):
            raise HarnessError(f"{self._source}: storages of {storage_type!r:.40} are not read")
        if key not in self._storages:
            dtype_name = "bfloat16" if storage_type.name == "BFloat16Storage" else ""
            self._storages[key] = _Storage(key, dtype_name or _DTYPES[storage_type.name])
        return self._storages[key]


def _numpy_dtype(storage: _Storage) -> Any:
    return np.uint16 if storage.dtype == "bfloat16" else storage.dtype


def _read_zip(path: Path, archive: zipfile.ZipFile) -> Any:
    names = archive.namelist()
    pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
    if not pickles:
        raise HarnessError(f"{path} is a zip file but not one torch.save wrote (no data.pkl)")
    prefix = pickles[0][: -len("data.pkl")]
    storages: dict[str, _Storage] = {}

    def rebuild(storage: _Storage, *args: Any) -> Any:
        # A storage's bytes are its own member of the archive, read when a tensor first needs it.
        if storage.data is None:
            try:
                raw = archive.read(f"{prefix}data/{storage.key}")
            except KeyError as error:
                raise HarnessError(f"{path}: storage {storage.key} is missing") from error
            storage.data = np.frombuffer(raw, dtype=_numpy_dtype(storage))
        return _rebuild_tensor(storage, *args)

    return _Unpickler(io.BytesIO(archive.read(pickles[0])), storages, path, rebuild).load()


def _read_legacy(path: Path, raw: bytes) -> Any:
    stream = io.BytesIO(raw)
    try:
        magic = pickle.load(stream)
        if magic != _LEGACY_MAGIC:
            raise HarnessError(f"{path} is not a file torch.save wrote (no zip, no magic number)")
        pickle.load(stream)  # protocol version
        pickle.load(stream)  # system info (byte order, type sizes)
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        raise HarnessError(f"{path} is not a file torch.save wrote: {error}") from error
    storages: dict[str, _Storage] = {}
    # The object refers to storages whose bytes come after it: rebuild tensors afterwards.
    pending: list[tuple[_Storage, tuple[Any, ...], list[Any]]] = []

    def later(storage: _Storage, *args: Any) -> Any:
        holder: list[Any] = []
        pending.append((storage, args, holder))
        return holder

    result = _Unpickler(stream, storages, path, later).load()
    keys = pickle.load(stream)
    for key in keys:
        (count,) = struct.unpack("<q", stream.read(8))
        storage = storages[str(key)]
        dtype = np.dtype(_numpy_dtype(storage))
        storage.data = np.frombuffer(stream.read(count * dtype.itemsize), dtype=dtype)
    for storage, args, holder in pending:
        holder.append(_rebuild_tensor(storage, *args))
    return _resolve(result)


def _resolve(value: Any) -> Any:
    """Replace the legacy reader's one-element holders by their tensors, in containers."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], np.ndarray):
        return value[0]
    if isinstance(value, dict):
        return type(value)((k, _resolve(v)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(_resolve(v) for v in value)
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def load_torch_file(path: Path) -> Any:
    """What torch.load would return, tensors as numpy arrays; one line for anything else."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise HarnessError(f"cannot read {path}: {error.strerror or error}") from error
    if zipfile.is_zipfile(io.BytesIO(raw)):
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            return _read_zip(path, archive)
    return _read_legacy(path, raw)


def load_state_dict(path: Path) -> dict[str, npt.NDArray[Any]]:
    """A file holding a state dict (possibly under "state_dict"): name -> array."""
    loaded = load_torch_file(path)
    if (
        isinstance(loaded, dict)
        and "state_dict" in loaded
        and isinstance(loaded["state_dict"], dict)
    ):
        loaded = loaded["state_dict"]
    if not isinstance(loaded, dict) or not all(isinstance(v, np.ndarray) for v in loaded.values()):
        raise HarnessError(f"{path} does not hold a state dict (names to tensors)")
    return {str(k): v for k, v in loaded.items()}


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "BF16": np.uint16}


def load_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """A .safetensors file (an 8-byte header length, a JSON header of name -> dtype, shape and
    byte offsets, then the data) as name -> array; bfloat16 widened to float32."""
    import json

    try:
        raw = path.read_bytes()
        (length,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + length])
    except (OSError, struct.error, ValueError) as error:
        raise HarnessError(f"{path} is not a safetensors file: {error}") from error
    base = 8 + length
    out: dict[str, npt.NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(entry.get("dtype"))
        if dtype is None:
            raise HarnessError(f"{path}: tensor {name} is {entry.get('dtype')}, not read here")
        start, end = entry["data_offsets"]
        array = np.frombuffer(raw[base + start : base + end], dtype=dtype).reshape(entry["shape"])
        if entry["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        out[name] = array
    return out
