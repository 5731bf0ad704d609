"""Reading torch.save's two formats without torch. The files are written here as torch writes them
(the same pickle opcodes: storages as persistent ids, tensors by `torch._utils._rebuild_tensor_v2`),
with stand-ins for torch's modules registered only while pickling; the zip format is also read from
MLCommons' real latents.pt in test_coco_t2i_data.py where a mirror of the repository exists."""

from __future__ import annotations

import collections
import io
import pickle
import struct
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from one_line_errors import raised_line

from mlperf_harness.torch_file import load_state_dict, load_torch_file


class _Storage:
    def __init__(self, key: str, array: np.ndarray[Any, Any]) -> None:
        self.key, self.array = key, array


class _Tensor:
    """Pickles as torch.Tensor does: _rebuild_tensor_v2(storage, offset, size, stride, ...)."""

    def __init__(
        self, storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...]
    ) -> None:
        self.args: tuple[Any, ...] = (
            storage,
            offset,
            size,
            stride,
            False,
            collections.OrderedDict(),
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (sys.modules["torch._utils"]._rebuild_tensor_v2, self.args)


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args: Any) -> None:
        raise AssertionError("never called while pickling")

    _rebuild_tensor_v2.__module__, _rebuild_tensor_v2.__qualname__ = (
        "torch._utils",
        "_rebuild_tensor_v2",
    )
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2  # type: ignore[attr-defined]
    storage_type = type("FloatStorage", (), {"__module__": "torch"})
    torch.FloatStorage = storage_type  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    return torch


class _Pickler(pickle.Pickler):
    def __init__(self, stream: io.BytesIO, legacy: bool) -> None:
        super().__init__(stream, protocol=2)
        self.legacy = legacy
        self.storages: dict[str, _Storage] = {}

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            self.storages[obj.key] = obj
            storage_type = sys.modules["torch"].FloatStorage
            if self.legacy:
                return ("storage", storage_type, obj.key, "cpu", obj.array.size, None)
            return ("storage", storage_type, obj.key, "cpu", obj.array.size)
        return None


def _state() -> tuple[dict[str, Any], dict[str, np.ndarray[Any, Any]]]:
    data = np.arange(24, dtype=np.float32)
    storage = _Storage("0", data)
    # A view with an offset and a transposed stride, as a state dict may hold.
    state = collections.OrderedDict(
        weight=_Tensor(storage, 0, (2, 3), (3, 1)),
        transposed=_Tensor(storage, 6, (3, 2), (1, 3)),
    )
    expected = {"weight": data[:6].reshape(2, 3), "transposed": data[6:12].reshape(2, 3).T}
    return state, expected


def test_the_zip_format_reads_tensors_and_views(
    tmp_path: Path, fake_torch: types.ModuleType
) -> None:
    state, expected = _state()
    stream = io.BytesIO()
    pickler = _Pickler(stream, legacy=False)
    pickler.dump(state)
    with zipfile.ZipFile(tmp_path / "w.pt", "w") as archive:
        archive.writestr("archive/data.pkl", stream.getvalue())
        for key, storage in pickler.storages.items():
            archive.writestr(f"archive/data/{key}", storage.array.tobytes())
    loaded = load_state_dict(tmp_path / "w.pt")
    assert set(loaded) == set(expected)
    for name, value in expected.items():
        assert np.array_equal(loaded[name], value), name


def test_the_legacy_format_reads_tensors_and_views(
    tmp_path: Path, fake_torch: types.ModuleType
) -> None:
    state, expected = _state()
    stream = io.BytesIO()
    for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
        pickle.dump(header, stream, protocol=2)
    pickler = _Pickler(stream, legacy=True)
    pickler.dump(state)
    pickle.dump(sorted(pickler.storages), stream, protocol=2)
    for key in sorted(pickler.storages):
        array = pickler.storages[key].array
        stream.write(struct.pack("<q", array.size) + array.tobytes())
    (tmp_path / "w.pth").write_bytes(stream.getvalue())
    loaded = load_torch_file(tmp_path / "w.pth")
    for name, value in expected.items():
        assert np.array_equal(loaded[name], value), name


def test_a_pickle_needing_other_code_is_refused_in_one_line(tmp_path: Path) -> None:
    payload = pickle.dumps(collections.Counter(a=1), protocol=2)
    with zipfile.ZipFile(tmp_path / "x.pt", "w") as archive:
        archive.writestr("archive/data.pkl", payload)
    assert "its pickle needs collections.Counter" in raised_line(load_torch_file, tmp_path / "x.pt")
