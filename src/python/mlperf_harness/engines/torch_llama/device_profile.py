"""Where the torch Llama engine's time goes, on a GPU host (benchmarks/llama2-70b/device/
gpu_scenarios.sh's `profile` phase): Llama-2-70B's shape with seeded random weights, every slot
filled with a prompt of the real-size workload (each prefill timed), then `--steps` decode steps
of all slots at once (each timed), then a few more under torch.profiler: the kernels that took the
most GPU time and the host's time per step. What the in-flight figure of device_check.py does not
say: how a run's time splits between prefill and decode, and within a step between the GEMMs,
attention and everything else.

Writes one JSON record and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.decoding import MAX_NEW_TOKENS
from mlperf_harness.benchmarks.llama2_70b.real_size import draw_workload
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.factory import build_rank

PROFILED_STEPS = 3
TOP_KERNELS = 15


def _seconds(torch: Any, work: Any) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    work()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def fill(torch: Any, engine: TorchLlamaEngine, prompts: Sequence[Any]) -> dict[str, float]:
    """Every slot prefilled with one prompt, each timed."""
    times = [
        _seconds(torch, lambda s=slot, p=prompt: engine.prefill([s], [p]))
        for slot, prompt in zip(range(engine.slots), prompts, strict=False)
    ]
    tokens = sum(int(p.size) for p in prompts[: engine.slots])
    return {
        "prompts": len(times),
        "prompt_tokens_mean": round(tokens / len(times), 1),
        "prefill_ms_mean": round(1e3 * float(np.mean(times)), 2),
        "prefill_ms_p90": round(1e3 * float(np.percentile(times, 90)), 2),
        "prefill_tokens_per_second": round(tokens / sum(times), 1),
    }


def decode(torch: Any, engine: TorchLlamaEngine, steps: int) -> dict[str, float]:
    """`steps` decode steps of every slot (token 1 each: random weights, no choice to make)."""
    slots = list(range(engine.slots))
    parents, tokens = np.zeros(len(slots), np.int64), np.ones(len(slots), np.int64)
    times = [_seconds(torch, lambda: engine.advance(slots, parents, tokens)) for _ in range(steps)]
    step = float(np.median(times))
    return {
        "steps": steps,
        "step_ms_median": round(1e3 * step, 2),
        "tokens_per_second": round(len(slots) / step, 1),
        "cache_length_after": int(engine.lengths.max()),
    }


def kernels(torch: Any, engine: TorchLlamaEngine) -> dict[str, Any]:
    """The top kernels by GPU time over PROFILED_STEPS decode steps, and the host's ms a step."""
    slots = list(range(engine.slots))
    parents, tokens = np.zeros(len(slots), np.int64), np.ones(len(slots), np.int64)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=activities) as prof:
        started = time.perf_counter()
        for _ in range(PROFILED_STEPS):
            engine.advance(slots, parents, tokens)
        host = time.perf_counter() - started  # before the sync: what the host spent issuing
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        gpu_us = getattr(event, "device_time_total", 0.0) or getattr(event, "cuda_time_total", 0.0)
        if gpu_us > 0 and event.count > 0:
            rows.append((gpu_us / PROFILED_STEPS / 1e3, event.count // PROFILED_STEPS, event.key))
    rows.sort(reverse=True)
    return {
        "host_ms_per_step": round(1e3 * host / PROFILED_STEPS, 2),
        "top": [
            {"gpu_ms_per_step": round(ms, 3), "calls_per_step": calls, "name": name[:90]}
            for ms, calls, name in rows[:TOP_KERNELS]
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_llama.device_profile")
    parser.add_argument("--slots", type=int, help="default: as many as fill the GPU")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--precision", default="fp8")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    engine = build_rank(0, 1, args.slots, 1024, MAX_NEW_TOKENS, 2, args.precision)
    prompts = draw_workload(engine.slots).prompts(32_000)
    record: dict[str, Any] = {"gpu": torch.cuda.get_device_name(0), "slots": engine.slots}
    record["prefill"] = fill(torch, engine, prompts)
    print(f"prefill: {record['prefill']}", flush=True)
    record["decode"] = decode(torch, engine, args.steps)
    print(f"decode: {record['decode']}", flush=True)
    record["kernels"] = kernels(torch, engine)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"host {record['kernels']['host_ms_per_step']} ms a step; top kernels (GPU ms a step):")
    for row in record["kernels"]["top"]:
        print(f"{row['gpu_ms_per_step']:>10.3f} {row['calls_per_step']:>6}  {row['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
