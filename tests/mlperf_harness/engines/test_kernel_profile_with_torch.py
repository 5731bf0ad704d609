"""The shared kernel table (engines/kernel_profile.py) on the CPU where torch is installed: torch's
profiler over a few calls of a small piece of work, its ops ranked by their own time, the named
ranges' time, the host's time a call, the record and lines the Llama and GPT-J profiles print. On
a GPU the same code ranks CUDA kernels by GPU time: not run here."""

from __future__ import annotations

from typing import Any

import pytest
from torch_needed import needs_torch

from mlperf_harness.engines.kernel_profile import kernel_lines, profile_steps

pytestmark = needs_torch


def _torch() -> Any:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    return torch


def _work() -> None:
    torch = _torch()

    a = torch.ones(192, 192)
    with torch.profiler.record_function("part.matmuls"):
        for _ in range(4):
            a = a @ a / 192
    with torch.profiler.record_function("part.softmax"):
        torch.softmax(a, dim=-1)
    torch.relu(a)  # outside every range


def test_ops_are_ranked_by_their_own_time_and_ranges_are_summed() -> None:
    torch = _torch()
    profile = profile_steps(
        torch, _work, 3, top=8, on_gpu=False, kernels_only=True, label_prefix="part."
    )
    assert profile.steps == 3 and 4 <= len(profile.top) <= 8
    times = [row.gpu_ms_per_step for row in profile.top]
    assert times == sorted(times, reverse=True)
    by_name = {row.name: row for row in profile.top}
    assert by_name["aten::mm"].calls_per_step == 4  # per call, not over the three
    assert set(profile.labels) == {"part.matmuls", "part.softmax"}  # no range among the ops
    assert profile.labels["part.matmuls"] >= by_name["aten::mm"].gpu_ms_per_step
    assert profile.kernel_ms_per_step >= sum(times)
    assert profile.host_ms_per_step >= profile.labels["part.matmuls"]


def test_the_record_and_its_lines_keep_the_llama_profiles_form() -> None:
    torch = _torch()
    record = profile_steps(torch, _work, 2, top=2, on_gpu=False).record()
    assert set(record) == {"host_ms_per_step", "top"}
    assert [set(row) for row in record["top"]] == [
        {"gpu_ms_per_step", "calls_per_step", "name"}
    ] * 2
    row = record["top"][0]
    line = f"{row['gpu_ms_per_step']:>10.3f} {row['calls_per_step']:>6}  {row['name']}"
    assert kernel_lines(record["top"])[0] == line
    with pytest.raises(ValueError, match="at least one step"):
        profile_steps(torch, _work, 0, on_gpu=False)
