"""Where GPT-J's torch engine spends its GPU time, on a GPU host (`PROFILE=1 bash
benchmarks/gptj/device/engine.sh`), for each precision of --precisions: GPT-J 6B's shape with
seeded random weights, slots filling the GPU (device_check.real_size_engine), then

1. run: the timing workload (--samples samples) decoded to the end through the scheduler, its GPU
   time split by call on CUDA events (call_split.py): prefill, decode steps, beam top-k, idle;
2. prefill: one prefill call of a typical batch (as many workload prompts as the run's prefill
   calls took on average) under torch.profiler: its top kernels by GPU time, the host's ms, and
   the GPU ms of each part (the engine's named ranges: embed, project, kv_write,
   prefill_attention, finish, lm_head);
3. decode: every slot filled with a workload prompt, then the decode step over all of them as a
   run makes it (`advance`: its CUDA graph) under torch.profiler: top kernels, host ms a step;
4. decode_parts: the same step eager (the graphs set aside: a replay has no named ranges), GPU ms
   by part (step_setup, project, kv_write, prompt_attention, generated_attention, merge, finish,
   lm_head; decode_kernel in place of the three attention parts where the engine chose its Triton
   kernel); the graph's kernels, launched one by one (kernel time excludes the gaps either way);
5. candidates: log-softmax and top k over every slot's beams x vocabulary, read back.

Each of 2-5 is also timed on CUDA events (kernels and the gaps between them: what a run pays).
"other" in a part split is the kernels outside every range (the uploads of a call's inputs).
Writes one JSON record and prints one table. The profiler's own recording adds to the host's ms.

`python -m mlperf_harness.engines.torch_gptj.device_profile [--samples N] [--slots N]
 [--precisions fp16,fp8] --out profile.json`
"""

from __future__ import annotations

import functools
import gc
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.engines import kernel_profile
from mlperf_harness.engines.torch_gptj.device_check import (
    SPLIT_NAMES,
    precision_list,
    real_size_engine,
    timed_run,
)
from mlperf_harness.engines.torch_gptj.engine import PART, TorchGptjEngine
from mlperf_harness.engines.torch_gptj.timing_workload import draw_workload
from mlperf_harness.generation.engine import Int64Array

PROFILED_CALLS = 3
WARM_STEPS = 2
TOP_KERNELS = 10


def profiled(torch: Any, work: Callable[[], Any], on_gpu: bool = True) -> dict[str, Any]:
    """kernel_profile.profiled at this profile's counts and ranges: the record of its table."""
    return kernel_profile.profiled(
        torch, work, calls=PROFILED_CALLS, top=TOP_KERNELS, label_prefix=PART, on_gpu=on_gpu
    )


def prefill_profile(
    torch: Any, engine: TorchGptjEngine, prompts: list[Int64Array], on_gpu: bool = True
) -> dict[str, Any]:
    """One prefill call of `prompts` into the first free slots (released after each call)."""
    slots = list(range(len(prompts)))

    def work() -> None:
        engine.prefill(slots, prompts)
        engine.release(slots)

    return {
        "prompts": len(prompts),
        "prompt_tokens": int(sum(p.size for p in prompts)),
    } | profiled(torch, work, on_gpu)


def fill_every_slot(engine: TorchGptjEngine, prompts: list[Int64Array]) -> dict[str, Any]:
    """Every slot prefilled with a workload prompt (cycled when there are fewer)."""
    slots = list(range(engine.slots))
    engine.prefill(slots, [prompts[i % len(prompts)] for i in slots])
    lengths = engine.book.prompt_lengths
    return {"slots": len(slots), "prompt_tokens_mean": round(float(lengths.mean()), 1)}


def decode_step(engine: TorchGptjEngine) -> Callable[[], None]:
    """One decode step of every slot (token 1 for each beam, parents the identity: random weights
    choose nothing)."""
    slots = list(range(engine.slots))
    parents = np.tile(np.arange(engine.beams, dtype=np.int64), (len(slots), 1))
    tokens = np.ones((len(slots), engine.beams), np.int64)
    return lambda: engine.advance(slots, parents, tokens)


def decode_parts(torch: Any, engine: TorchGptjEngine, on_gpu: bool = True) -> dict[str, Any]:
    """The decode step run eager (the engine's graphs set aside for it), profiled by part."""
    graphs, engine.graphs = engine.graphs, {}
    try:
        return profiled(torch, decode_step(engine), on_gpu)
    finally:
        engine.graphs = graphs


def candidates_profile(torch: Any, engine: TorchGptjEngine, on_gpu: bool = True) -> dict[str, Any]:
    """The beams' top k over every slot, k = 2 x beams as the scheduler asks."""
    slots = list(range(engine.slots))
    scores = np.zeros((len(slots), engine.beams), np.float32)
    no_eos = np.zeros(len(slots), bool)
    return profiled(
        torch, lambda: engine.candidates(slots, scores, no_eos, 2 * engine.beams), on_gpu
    )


def profile_engine(
    torch: Any,
    engine: TorchGptjEngine,
    run: Callable[[], dict[str, Any]],
    prompts: list[Int64Array],
    on_gpu: bool = True,
) -> dict[str, Any]:
    """Phases 1-5 on one engine (`run` makes the whole run's record); the first that fails ends
    them with its line in "error", what was measured before it kept."""
    record: dict[str, Any] = {}

    def typical_prefill() -> dict[str, Any]:
        count = round(float(record.get("run", {}).get("prompts_per_prefill", 1)))
        return prefill_profile(torch, engine, prompts[: max(1, min(count, engine.slots))], on_gpu)

    def decode() -> dict[str, Any]:
        filled = fill_every_slot(engine, prompts)
        step = decode_step(engine)
        for _ in range(WARM_STEPS - 1):  # profiled() runs one more unprofiled
            step()
        return filled | {"cuda_graph": bool(engine.graphs)} | profiled(torch, step, on_gpu)

    phases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("run", run),
        ("prefill", typical_prefill),
        ("decode", decode),
        ("decode_parts", lambda: decode_parts(torch, engine, on_gpu)),
        ("candidates", lambda: candidates_profile(torch, engine, on_gpu)),
    ]
    for name, phase in phases:
        try:
            record[name] = phase()
        except Exception as error:  # a kernel this torch lacks, the profiler under graphs...
            traceback.print_exc()
            record["error"] = f"{name}: {type(error).__name__}: {error}"[:300]
            break
    return record


def _share(ms: float, whole: float) -> str:
    return f"{100 * ms / whole:.0f}%" if whole > 0 else "-"


def _kernel_rows(label: str, profile: dict[str, Any]) -> list[str]:
    whole = profile["kernel_ms_per_step"]
    return [
        f"| {label}: {row['name']} | {row['gpu_ms_per_step']:.3f} ms | "
        f"{_share(row['gpu_ms_per_step'], whole)} | {row['calls_per_step']} |"
        for row in profile["top"]
    ]


def _part_rows(label: str, profile: dict[str, Any]) -> list[str]:
    whole = profile["kernel_ms_per_step"]
    return [
        f"| {label}: {name} | {ms:.3f} ms | {_share(ms, whole)} | |"
        for name, ms in profile.get("parts_ms_per_step", {}).items()
    ]


def _heading(what: str, profile: dict[str, Any]) -> str:
    """A call's line: its kernels' GPU ms summed; the host's ms and (GPU) the CUDA events' ms."""
    events = profile.get("event_ms_per_step")
    timed = f", {events:.3f} ms on CUDA events" if events is not None else ""
    return (
        f"| **{what}** (host {profile['host_ms_per_step']:.2f} ms a call{timed}) | "
        f"{profile['kernel_ms_per_step']:.3f} ms | 100% | |"
    )


def table(records: dict[str, dict[str, Any]]) -> list[str]:
    """One table: per precision the run's GPU split, then prefill, the decode step and the beam
    top-k, each its GPU ms (all its kernels), its top kernels and its parts."""
    lines = ["| what | GPU time | share | calls |", "| --- | ---: | ---: | ---: |"]
    for precision, r in records.items():
        made = r.get("made", {})
        lines.append(
            f"| **GPT-J 6B {precision}, {made.get('gpu', '?')}, {made.get('slots', '?')} slots x "
            f"4 beams, prompt kernel {made.get('prompt_attention', '?')}** | | | |"
        )
        run = r.get("run")
        if run:
            split, calls = run["gpu_split_seconds"], run["calls"]
            lines.append(
                f"| **whole run**: {run['samples']} samples in {run['seconds']} s, "
                f"{run['samples_per_second']} samples/s ({run['prompts_per_prefill']} prompts a "
                f"prefill call) | {run['seconds']} s | 100% | |"
            )
            for name, seconds in split.items():
                lines.append(
                    f"| run, GPU time: {SPLIT_NAMES.get(name, name)} | "
                    f"{seconds} s | {_share(seconds, run['seconds'])} | {calls.get(name, '')} |"
                )
        prefill = r.get("prefill")
        if prefill:
            what = f"prefill, {prefill['prompts']} prompts of {prefill['prompt_tokens']} tokens"
            lines.append(_heading(what, prefill))
            lines += _kernel_rows("prefill kernel", prefill) + _part_rows("prefill part", prefill)
        decode = r.get("decode")
        if decode:
            what = (
                f"decode step, {decode['slots']} slots (prompts {decode['prompt_tokens_mean']} "
                f"tokens mean), {'CUDA graph' if decode['cuda_graph'] else 'eager'}"
            )
            lines.append(_heading(what, decode))
            lines += _kernel_rows("decode kernel", decode)
        parts = r.get("decode_parts")
        if parts:
            lines.append(_heading("decode step eager, by part", parts))
            lines += _part_rows("decode part", parts)
        top_k = r.get("candidates")
        if top_k:
            lines.append(_heading("beam top-k (candidates), every slot", top_k))
            lines += _kernel_rows("top-k kernel", top_k)
        if "error" in r:
            lines.append(f"| FAILED {r['error']} | | | |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="device_profile", description=__doc__)
    parser.add_argument("--samples", type=positive_int, default=1024)
    parser.add_argument("--slots", type=positive_int, default=None)
    parser.add_argument("--precisions", type=precision_list, default=("fp16",))
    parser.add_argument("--out", type=Path, required=True)

    def body() -> int:
        args = parser.parse_args(argv)
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

        workload = draw_workload(args.samples, seed=0)
        prompts = workload.prompts(GPTJ_6B.vocab_size)
        max_prompt = int(workload.prompt_lengths.max())
        records: dict[str, dict[str, Any]] = {}
        for precision in args.precisions:
            try:
                engine, made = real_size_engine(torch, precision, args.slots, max_prompt)
            except Exception as error:
                traceback.print_exc()
                records[precision] = {"error": f"build: {type(error).__name__}: {error}"[:300]}
                continue
            print(f"{precision}: engine built, {made['slots']} slots", flush=True)
            records[precision] = {"made": made} | profile_engine(
                torch, engine, functools.partial(timed_run, torch, engine, workload), prompts
            )
            del engine
            gc.collect()
            torch.cuda.empty_cache()
            write_json_atomic(args.out, {"precisions": records, "table": table(records)})
            print("\n".join(table({precision: records[precision]})[2:]), flush=True)
        print("\n" + "\n".join(table(records)))
        return 0 if all("error" not in r for r in records.values()) else 1

    return run_entry_point("device_profile", body)


if __name__ == "__main__":
    sys.exit(main())
