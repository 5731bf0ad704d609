"""One call of the round trip the torch runner captures for each engine (runner.round_trip,
captured by capture_round_trips), on CPU tensors: the rows in the host buffer reach the engine,
gathered by the engine itself where it can and by an index_select where it cannot, and its chosen
output lands in the host output buffer's leading rows, for a whole batch and for a smaller engine
of the ladder. The CUDA graph around it needs a GPU (the device scripts run it). Skipped where
torch is not installed (CI)."""

from __future__ import annotations

from typing import Any

import pytest
from torch_needed import needs_torch

from mlperf_harness.backends.torch_cuda.runner import Engine, round_trip

pytestmark = needs_torch


class BatchModel:
    """An engine that takes a batch, as an AOTInductor package does: its outputs are (the samples'
    sums, each sample's first value doubled); the runner reads output 1."""

    def __call__(self, batch: Any) -> tuple[Any, Any]:
        return batch.sum(dim=1), (batch[:, 0] * 2).long()


class GatheringModel(BatchModel):
    """The same engine gathering its batch itself, as exported.ExportedEngine does."""

    def gather(self, samples: Any, rows: Any) -> tuple[Any, Any]:
        return self(samples.index_select(0, rows))


@pytest.mark.parametrize("size", [4, 2])
@pytest.mark.parametrize("model", [GatheringModel(), BatchModel()], ids=["gathers", "batch"])
def test_a_round_trip_sends_the_rows_and_brings_back_the_chosen_output(
    size: int, model: BatchModel
) -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    samples = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    host_rows = torch.zeros(4, dtype=torch.int64)
    gpu_rows = torch.zeros(4, dtype=torch.int64)
    host_out = torch.full((4,), -1, dtype=torch.int64)
    host_rows[:size] = torch.tensor([7, 3, 9, 0][:size])

    output = round_trip(Engine(size, model), samples, host_rows, gpu_rows, host_out, 1)

    assert output.tolist() == [56, 24, 72, 0][:size]  # sample i's first value is 4 i
    assert host_out[:size].tolist() == output.tolist()
    assert host_out[size:].tolist() == [-1] * (4 - size)  # a smaller engine leaves the rest alone
    assert gpu_rows[:size].tolist() == host_rows[:size].tolist()
