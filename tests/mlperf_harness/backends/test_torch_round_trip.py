"""One call of the round trip the torch runner captures for an engine that gathers its batch itself
(runner.round_trip, captured by capture_round_trips), on CPU tensors: the rows in the host buffer
reach the engine, and its chosen output lands in the host output buffer's leading rows, for a whole
batch and for a smaller engine of the ladder. The CUDA graph around it needs a GPU (the device
scripts run it). Skipped where torch is not installed (CI)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from mlperf_harness.backends.torch_cuda.runner import Engine, round_trip

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (CPU build)"
)


class GatheringModel:
    """An engine that gathers itself, as exported.ExportedEngine does: its outputs for the samples
    at `rows` are (the samples' sums, the row numbers doubled); the runner reads output 1."""

    def gather(self, samples: Any, rows: Any) -> tuple[Any, Any]:
        picked = samples.index_select(0, rows)
        return picked.sum(dim=1), rows * 2


@pytest.mark.parametrize("size", [4, 2])
def test_a_round_trip_sends_the_rows_and_brings_back_the_chosen_output(size: int) -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    samples = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    host_rows = torch.zeros(4, dtype=torch.int64)
    gpu_rows = torch.zeros(4, dtype=torch.int64)
    host_out = torch.full((4,), -1, dtype=torch.int64)
    host_rows[:size] = torch.tensor([7, 3, 9, 0][:size])

    output = round_trip(Engine(size, GatheringModel()), samples, host_rows, gpu_rows, host_out, 1)

    assert output.tolist() == [14, 6, 18, 0][:size]
    assert host_out[:size].tolist() == output.tolist()
    assert host_out[size:].tolist() == [-1] * (4 - size)  # a smaller engine leaves the rest alone
    assert gpu_rows[:size].tolist() == host_rows[:size].tolist()
