"""GPT-J's device profile (torch_gptj/device_profile.py) on the CPU where torch is installed: a tiny
seeded GPT-J engine in float32 goes through every phase the GPU profile runs (a timed run split by
call, a typical prefill, every slot filled and the decode step profiled as run and by part, the
beams' top k) and the table names each; on the CPU the "kernels" are torch's ops and the host's
clock is the device's. The GPU run itself (CUDA graphs, CUDA events, kernel names) has not been
checked here: `PROFILE=1 bash benchmarks/gptj/device/engine.sh` does it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, random_weights
from mlperf_harness.engines.torch_gptj import device_profile
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout
from mlperf_harness.engines.torch_gptj.device_check import one_at_a_time, timed_run
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.module import from_weights
from mlperf_harness.generation.timing_workload import TimingWorkload

pytestmark = needs_torch
SHAPE = GptjShape(layers=2, hidden=64, heads=4, rotary_dim=8, vocab_size=97, inner=96)
EOS = 5
DECODE_PARTS = {
    "step_setup",
    "project",
    "kv_write",
    "prompt_attention",
    "generated_attention",
    "merge",
    "finish",
    "lm_head",
}
PREFILL_PARTS = {"embed", "project", "kv_write", "prefill_attention", "finish", "lm_head"}


@pytest.fixture(scope="module")
def profiled() -> tuple[dict[str, Any], TorchGptjEngine]:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    model = from_weights(torch, random_weights(SHAPE, seed=2), SHAPE, torch.device("cpu"), "fp32")
    engine = TorchGptjEngine(model, CacheLayout(slots=3, beams=4, max_prompt=40, max_new=40), EOS)
    workload = TimingWorkload(
        prompt_lengths=np.array([12, 40, 7, 25, 3]),
        output_lengths=np.array([30, 33, 31, 36, 30]),
        seed=0,
        note="forced",
    )
    prompts = workload.prompts(SHAPE.vocab_size)
    record = device_profile.profile_engine(
        torch,
        engine,
        lambda: timed_run(torch, engine, workload, on_gpu=False),
        prompts,
        on_gpu=False,
    )
    return record, engine


def test_every_phase_runs_and_its_parts_are_named(
    profiled: tuple[dict[str, Any], TorchGptjEngine],
) -> None:
    record, engine = profiled
    assert "error" not in record, record.get("error")
    run = record["run"]
    assert run["samples"] == 5
    # a sample's last candidates call ends it: no step follows
    assert 0 < run["calls"]["advance"] <= run["calls"]["candidates"]
    split = run["gpu_split_seconds"]
    assert set(split) == {"prefill", "advance", "candidates", "idle"}
    assert all(split[k] > 0 for k in ("prefill", "advance", "candidates"))
    assert abs(sum(split.values()) - run["seconds"]) < 0.01  # the rounding of five figures
    # the typical prefill takes the run's mean prompts per call
    assert record["prefill"]["prompts"] == max(1, round(run["prompts_per_prefill"]))
    # ("other", the kernels outside the ranges, is a GPU figure: on the CPU a range's time is all
    # of its CPU time, Python's included)
    assert set(record["prefill"]["parts_ms_per_step"]) == PREFILL_PARTS
    assert record["decode"]["slots"] == engine.slots == int(engine.book.live.sum())
    assert set(record["decode_parts"]["parts_ms_per_step"]) == DECODE_PARTS
    for phase in ("prefill", "decode", "decode_parts", "candidates"):
        profile = record[phase]
        top = [row["gpu_ms_per_step"] for row in profile["top"]]
        assert top and top == sorted(top, reverse=True)
        assert sum(top) <= profile["kernel_ms_per_step"] + 1e-3
        assert profile["host_ms_per_step"] > 0
    parts = record["decode_parts"]["parts_ms_per_step"]
    assert all(ms > 0 for ms in parts.values())
    # the engine's state is what a run leaves: graphs (none on the CPU) restored, slots live
    assert engine.graphs == {}


def test_the_table_has_a_section_per_phase(
    profiled: tuple[dict[str, Any], TorchGptjEngine],
) -> None:
    record, _ = profiled
    lines = device_profile.table({"fp32": {"made": {"gpu": "CPU", "slots": 3}} | record})
    text = "\n".join(lines)
    assert lines[0] == "| what | GPU time | share | calls |"
    assert "| **GPT-J 6B fp32, CPU, 3 slots x 4 beams" in text
    assert "| run, GPU time: decode steps |" in text
    assert "| run, GPU time: GPU idle between calls |" in text
    assert "| **prefill, " in text and "| prefill part: prefill_attention |" in text
    assert "| **decode step, 3 slots" in text and "| decode kernel: aten::" in text
    assert "tokens mean), eager** (host " in text  # no CUDA graphs on the CPU
    assert "| decode part: generated_attention |" in text
    assert "| **beam top-k (candidates), every slot**" in text
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines)
    failed = device_profile.table({"fp8": {"error": "decode: RuntimeError: no"}})
    assert failed[-1] == "| FAILED decode: RuntimeError: no | | | |"


def test_samples_decoded_one_at_a_time_give_singlestream_figures() -> None:
    import torch  # pants: no-infer-dep  (mypy's import-not-found: told once a module, above)

    model = from_weights(torch, random_weights(SHAPE, seed=2), SHAPE, torch.device("cpu"), "fp32")
    engine = TorchGptjEngine(model, CacheLayout(slots=2, beams=4, max_prompt=40, max_new=40), EOS)
    workload = TimingWorkload(
        prompt_lengths=np.array([12, 40, 7]), output_lengths=np.array([30, 40, 32]), seed=1, note=""
    )
    one = one_at_a_time(torch, engine, workload, 2, on_gpu=False)
    assert one["samples"] == 2 and one["mean_output_tokens"] == 35.0
    assert 0 < one["p50_ms"] <= one["p90_ms"]
    assert one["ms_per_generated_token"] > 0
