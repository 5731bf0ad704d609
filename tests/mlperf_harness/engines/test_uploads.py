"""engines/uploads.py: host arrays onto a device. On the CPU (a CPU torch, where installed) the
values, dtype and shape arrive as given, non-contiguous arrays included; for a GPU, which CI lacks,
a stand-in for torch records that the copy goes through pinned memory and is not blocking (torch
would otherwise synchronize the stream before the host goes on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
from torch_needed import needs_torch

from mlperf_harness.engines.uploads import copy_into, to_device


@dataclass
class _FakeTensor:
    """What the upload path calls on a tensor, recorded (a stand-in: no GPU here)."""

    array: Any
    calls: list[str] = field(default_factory=list)
    device: Any = None

    def pin_memory(self) -> _FakeTensor:
        self.calls.append("pin_memory")
        return self

    def to(self, device: Any, non_blocking: bool = False) -> _FakeTensor:
        self.calls.append(f"to {device.type} non_blocking={non_blocking}")
        return self

    def copy_(self, source: _FakeTensor, non_blocking: bool = False) -> None:
        self.calls.append(f"copy_ from {source.calls} non_blocking={non_blocking}")


def test_a_gpu_upload_is_pinned_and_not_blocking() -> None:
    made: list[_FakeTensor] = []

    def from_numpy(array: Any) -> _FakeTensor:
        assert array.flags["C_CONTIGUOUS"]
        made.append(_FakeTensor(array))
        return made[-1]

    fake_torch = SimpleNamespace(from_numpy=from_numpy)
    gpu = SimpleNamespace(type="cuda")
    to_device(fake_torch, np.arange(6).reshape(2, 3)[:, ::2], gpu)
    assert made[-1].calls == ["pin_memory", "to cuda non_blocking=True"]
    target = _FakeTensor(None, device=gpu)
    copy_into(fake_torch, target, np.zeros(3))
    assert target.calls == ["copy_ from ['pin_memory'] non_blocking=True"]


@needs_torch
def test_on_the_cpu_the_arrays_arrive_as_given() -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    cpu = torch.device("cpu")
    strided = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    got = to_device(torch, strided, cpu)
    assert got.dtype == torch.int32 and np.array_equal(got.numpy(), strided)
    target = torch.zeros(2, 2, dtype=torch.int64)
    copy_into(torch, target, np.array([[1, 2], [3, 4]]))
    assert target.tolist() == [[1, 2], [3, 4]]
