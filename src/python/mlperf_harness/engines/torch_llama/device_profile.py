"""Where the torch Llama engine's time goes, and what each of its options (options.py) changes, on
a GPU host (benchmarks/llama2-70b/device/gpu_scenarios.sh's `profile` phase): Llama-2-70B's shape
with seeded random weights drawn once, then for each variant an engine over it: every slot filled
with a prompt of the real-size workload (the prefills timed as the variant makes them), `--steps`
decode steps of all slots at once (each timed; the first WARM_STEPS untimed: a graph variant
captures there), a few more under torch.profiler (the kernels that took the most GPU time and the
host's time per step), how often its next token (the argmax of the held logits) after the
prefills and after the steps is the first variant's, and what admitting one prompt alone costs
at a few prompt lengths (`admission`: Interactive's admissions, each a prefill of its own between
decode steps, the cost every live sample's time per output token carries).

Writes one JSON record and prints one table.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.decoding import MAX_NEW_TOKENS
from mlperf_harness.benchmarks.llama2_70b.model import LLAMA2_70B
from mlperf_harness.benchmarks.llama2_70b.real_size import draw_workload
from mlperf_harness.engines.kernel_profile import TOP_KERNELS, kernel_lines, profile_steps
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.factory import REAL_SIZE_SEED, random_llama, slots_to_fill
from mlperf_harness.engines.torch_llama.module import Parallel, TorchLlama
from mlperf_harness.engines.torch_llama.options import EngineOptions

PROFILED_STEPS = 3
WARM_STEPS = 2
MAX_PROMPT = 1024
# One prompt admitted alone at these lengths: the real-size workload's median is about 160 tokens,
# its mean about 230, its longest 1,024.
ADMISSION_LENGTHS = (64, 160, 512, 1024)
ADMISSION_REPEATS = 3
VARIANTS = (
    "prefill=serial,attention=gqa,graphs=0",  # the first engine
    "prefill=packed,attention=gqa,graphs=0",
    "prefill=packed,attention=folded,graphs=0",
    "prefill=packed,attention=folded,graphs=1",
    "prefill=packed,attention=packed,graphs=0",
    "prefill=packed,attention=packed,graphs=1",
    "prefill=packed,attention=fp8kernel,graphs=0",
    "prefill=packed,attention=fp8kernel,graphs=1",
    # the FP8 products with one activation scale per product (fp8_linear.py's tensor form) beside
    # the row form's two fastest graph variants
    "prefill=packed,attention=packed,graphs=1,activation_scale=tensor",
    "prefill=packed,attention=fp8kernel,graphs=1,activation_scale=tensor",
    # the default without its fused inputs (every variant above fuses them where its FP8 products
    # are row-wise: fused=auto): torch's own kernels normalise, activate and quantize
    "prefill=packed,attention=fp8kernel,graphs=1,fused=0",
    # the default with one prompt's prefill under a CUDA graph: its admission lines against the
    # default's (filling every slot is one packed call in both)
    "prefill=static,attention=fp8kernel,graphs=1",
    # and with each prompt's tokens joined to the decode steps (its admission: the ms it adds)
    "prefill=chunked,attention=fp8kernel,graphs=1",
)


def _seconds(torch: Any, work: Any) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    work()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def fill(torch: Any, engine: TorchLlamaEngine, prompts: Sequence[Any]) -> dict[str, float]:
    """Every slot prefilled with one prompt: serially each prompt timed, packed the one call."""
    slots = list(range(engine.slots))
    prompts = list(prompts[: engine.slots])
    tokens = sum(int(p.size) for p in prompts)
    if engine.options.prefill == "serial":
        times = [
            _seconds(torch, lambda s=slot, p=prompt: engine.prefill([s], [p]))
            for slot, prompt in zip(slots, prompts, strict=True)
        ]
    else:  # a chunked prefill's queued prompts in forwards of their own: nothing to join yet

        def prefill_all() -> None:
            engine.prefill(slots, prompts)
            engine.flush_prefills()

        times = [_seconds(torch, prefill_all)]
    return {
        "prompts": len(prompts),
        "prompt_tokens": tokens,
        "prefill_seconds": round(sum(times), 3),
        "prefill_tokens_per_second": round(tokens / sum(times), 1),
    }


def decode(torch: Any, engine: TorchLlamaEngine, steps: int) -> dict[str, float]:
    """WARM_STEPS + `steps` decode steps of every slot (token 1 each: random weights choose
    nothing); the median of the timed ones."""
    slots = list(range(engine.slots))
    parents, tokens = np.zeros(len(slots), np.int64), np.ones(len(slots), np.int64)
    lengths = engine.lengths.copy()
    times = [
        _seconds(torch, lambda: engine.advance(slots, parents, tokens))
        for _ in range(WARM_STEPS + steps)
    ]
    step = float(np.median(times[WARM_STEPS:]))
    return {
        "steps": steps,
        "first_step_ms": round(1e3 * times[0], 2),
        "step_ms_median": round(1e3 * step, 2),
        "tokens_per_second": round(len(slots) / step, 1),
        "cache_length_mean": round(float(lengths.mean()), 1),
        "cache_length_longest": int(lengths.max()),
    }


def kernels(torch: Any, engine: TorchLlamaEngine) -> dict[str, Any]:
    """The top kernels by GPU time over PROFILED_STEPS decode steps, and the host's ms a step."""
    slots = list(range(engine.slots))
    parents, tokens = np.zeros(len(slots), np.int64), np.ones(len(slots), np.int64)
    profile = profile_steps(
        torch, lambda: engine.advance(slots, parents, tokens), PROFILED_STEPS, top=TOP_KERNELS
    )
    return profile.record()


def admission_prompts(lengths: Sequence[int], vocab: int) -> list[Any]:
    """The seeded prompts `admission` admits, one of each length."""
    rng = np.random.default_rng(REAL_SIZE_SEED)
    return [rng.integers(3, vocab, int(length)).astype(np.int64) for length in lengths]


def admission(
    torch: Any, engine: TorchLlamaEngine, lengths: Sequence[int], on_gpu: bool = True
) -> list[dict[str, Any]]:
    """Slot 0 freed and refilled with one prompt of each length, as the serving loop admits one
    sample (its prefill, then its first token read back by `candidates`): the median wall ms of
    ADMISSION_REPEATS such admissions after an untimed one, and one prefill under torch.profiler:
    the host's ms issuing it and its kernels' GPU ms. A wall time near the kernels' says the GPU's
    work sets it; near the host's, the launches do (what CUDA graphs of prefills would remove)."""
    if engine.joins_prefill:
        return joined_admission(torch, engine, lengths, on_gpu)
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    no_scores, no_block = np.zeros((1, 1), np.float32), np.zeros(1, bool)
    rows = []
    for prompt in admission_prompts(lengths, engine.model.shape.vocab_size):

        def prefill(p: Any = prompt) -> None:
            engine.release([0])
            engine.prefill([0], [p])

        def admit() -> None:
            prefill()
            engine.candidates([0], no_scores, no_block, 1)  # the first token, read back

        wall_s = median_wall(admit, sync)
        profile = profile_steps(torch, prefill, 1, top=1, on_gpu=on_gpu, kernels_only=True)
        rows.append({
            "prompt_tokens": int(prompt.size),
            "wall_ms": round(1e3 * wall_s, 2),
            "host_issue_ms": round(profile.host_ms_per_step, 2),
            "kernel_ms": round(profile.kernel_ms_per_step, 2),
        })  # fmt: skip
    return rows


def median_wall(work: Callable[[], None], sync: Callable[[], None]) -> float:
    """The median wall seconds of ADMISSION_REPEATS calls of `work` after an untimed one, each
    from an idle GPU to its work done."""
    work()
    times = []
    for _ in range(ADMISSION_REPEATS):
        sync()
        started = time.perf_counter()
        work()
        sync()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def joined_admission(
    torch: Any, engine: TorchLlamaEngine, lengths: Sequence[int], on_gpu: bool = True
) -> list[dict[str, Any]]:
    """`admission` for an engine that joins prompts to its decode steps (prefill "chunked"): no
    forward of a prompt's own to time, so what an admission costs is what it adds to a step. Slot 0
    freed and refilled with one prompt of each length while the other slots decode: the median
    wall ms of the steps that take the whole prompt (at most `prefill_tokens` a step: a longer one
    counts every step it spans) and read its first token back, less a plain step's (both medians of
    ADMISSION_REPEATS after an untimed one); the kernels and host ms of one such step over a plain
    one, under torch.profiler. Comparable with `admission`'s wall ms: both are what admitting one
    prompt adds to every live sample's time."""
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    others = list(range(1, engine.slots))
    every = [0, *others]
    ones = np.ones((len(others), 1), np.int64)
    scores, block = np.zeros((len(every), 1), np.float32), np.zeros(len(every), bool)

    def plain() -> None:
        if others:  # one slot: no step to join, the prompt runs alone
            engine.advance(others, np.zeros_like(ones), ones)
            engine.candidates(others, scores[1:], block[1:], 1)

    step_s = median_wall(plain, sync)
    alone = profile_steps(torch, plain, 1, top=1, on_gpu=on_gpu, kernels_only=True)
    rows = []
    for prompt in admission_prompts(lengths, engine.model.shape.vocab_size):
        spans: list[int] = []

        def admit(p: Any = prompt, spans: list[int] = spans) -> None:
            engine.release([0])
            engine.prefill([0], [p])
            steps = 0
            while engine.prefilling:
                engine.advance(others, np.zeros_like(ones), ones)
                steps += 1
            engine.candidates(every, scores, block, 1)  # its first token, read back
            spans.append(steps)

        admit_s = median_wall(admit, sync)
        steps = spans[-1]
        joined = profile_steps(torch, admit, 1, top=1, on_gpu=on_gpu, kernels_only=True)
        rows.append({
            "prompt_tokens": int(prompt.size),
            "joined_steps": steps,
            "wall_ms": round(1e3 * (admit_s - steps * step_s), 2),
            "host_issue_ms": round(joined.host_ms_per_step - steps * alone.host_ms_per_step, 2),
            "kernel_ms": round(joined.kernel_ms_per_step - steps * alone.kernel_ms_per_step, 2),
        })  # fmt: skip
    return rows


def admission_line(rows: Sequence[dict[str, Any]]) -> str:
    joined = rows and "joined_steps" in rows[0]
    head = (
        "admitting one prompt (ms added to the steps it joins): "
        if joined
        else ("admitting one prompt: ")
    )
    return head + "; ".join(
        f"{r['prompt_tokens']} tokens {r['wall_ms']:.1f} ms (kernels {r['kernel_ms']:.1f}, "
        f"host issue {r['host_issue_ms']:.1f}"
        + (f", {r['joined_steps']} steps)" if joined else ")")
        for r in rows
    )


def faster_prefill(records: Sequence[dict[str, Any]]) -> str | None:
    """Of the variants these profile records timed admissions for (without error), the prefill
    way whose admissions took the least wall time over the lengths; None where none did."""
    walls: dict[str, float] = {}
    for record in records:
        for variant in record.get("variants", []):
            rows = variant.get("admission")
            if not rows or "error" in variant:
                continue
            prefill = EngineOptions.parse(variant_text(variant["options"])).prefill
            total = sum(float(row["wall_ms"]) for row in rows)
            walls[prefill] = min(total, walls.get(prefill, total))
    return min(walls, key=walls.__getitem__) if walls else None


def variant_text(name: str) -> str:
    """An options `name` ("prefill=static attention=fp8kernel graphs fused") as the prefill and
    attention that `EngineOptions.parse` reads: what faster_prefill needs of it."""
    return ",".join(part for part in name.split() if part.startswith(("prefill=", "attention=")))


def next_tokens(engine: TorchLlamaEngine) -> Any:
    return engine.held.argmax(dim=-1).cpu().numpy()


def phases(
    torch: Any, engine: TorchLlamaEngine, prompts: Any, steps: int
) -> list[tuple[str, Callable[[], Any]]]:
    """What is measured of one variant, in order."""
    return [
        ("prefill", lambda: fill(torch, engine, prompts)),
        ("after_prefill", lambda: next_tokens(engine)),
        ("decode", lambda: decode(torch, engine, steps)),
        ("after_decode", lambda: next_tokens(engine)),
        ("kernels", lambda: kernels(torch, engine)),
        # last: it refills slot 0
        ("admission", lambda: admission(torch, engine, ADMISSION_LENGTHS)),
    ]


def variant(
    torch: Any, model: TorchLlama, slots: int, options: EngineOptions, prompts: Any, steps: int
) -> dict[str, Any]:
    engine = TorchLlamaEngine(model, slots, MAX_PROMPT, MAX_NEW_TOKENS, 2, True, options)
    record: dict[str, Any] = {"options": options.name}
    for name, phase in phases(torch, engine, prompts, steps):
        try:
            record[name] = phase()
        except Exception as error:  # a kernel this torch lacks, the profiler under graphs...
            record["error"] = f"{name}: {type(error).__name__}: {error}"[:300]
            break  # what was measured stays in the record
    record["graphs"] = len(engine.static.graphs) if engine.static else 0
    del engine  # its cache (about 58 GB) freed before the next variant's
    gc.collect()
    torch.cuda.empty_cache()
    return record


def table(records: list[dict[str, Any]]) -> list[str]:
    first = records[0]
    lines = [
        f"{'variant':<60}{'prefill tok/s':>14}{'step ms':>9}{'decode tok/s':>13}"
        f"{'host ms':>9}{'same next':>11}"
    ]
    for r in records:
        prefill = r.get("prefill", {}).get("prefill_tokens_per_second", float("nan"))
        step = r.get("decode", {}).get("step_ms_median", float("nan"))
        rate = r.get("decode", {}).get("tokens_per_second", float("nan"))
        host = r.get("kernels", {}).get("host_ms_per_step", float("nan"))
        same = "-"
        if r is not first and "after_decode" in r and "after_decode" in first:
            a = float(np.mean(r["after_prefill"] == first["after_prefill"]))
            b = float(np.mean(r["after_decode"] == first["after_decode"]))
            same = f"{a:.2f}/{b:.2f}"
        line = f"{r['options']:<60}{prefill:>14.1f}{step:>9.1f}{rate:>13.1f}{host:>9.1f}{same:>11}"
        lines.append(line + (f"  {r['error']}" if "error" in r else ""))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_llama.device_profile")
    parser.add_argument("--slots", type=int, help="default: as many as fill the GPU")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--precision", default="fp8")
    parser.add_argument(
        "--variants", default=";".join(VARIANTS), help="options.py's strings, ';' between"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--faster_prefill", type=Path, nargs="+", metavar="PROFILE_JSON",
        help="only print the prefill way whose admissions these records timed fastest (nothing "
        "where none timed any), and exit",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.faster_prefill:
        try:
            records = [json.loads(path.read_text()) for path in args.faster_prefill]
        except (OSError, ValueError) as error:
            print(f"device_profile: cannot read a profile record: {error}", file=sys.stderr)
            return 2
        print(faster_prefill(records) or "")
        return 0
    if args.out is None:
        parser.error("--out is required (where the profile's record goes)")
    variants = [EngineOptions.parse(text) for text in args.variants.split(";")]
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    device = torch.device("cuda", 0)
    started = time.perf_counter()
    model = random_llama(torch, LLAMA2_70B, device, args.precision, REAL_SIZE_SEED, Parallel())
    slots = args.slots or slots_to_fill(torch, device, LLAMA2_70B, MAX_PROMPT + MAX_NEW_TOKENS, 1)
    first = model.blocks[0].qkv
    record: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "slots": slots,
        "fp8_scaled_mm": bool(first.weight8 is not None and first.scaled_mm),
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    print(f"model built in {record['build_seconds']} s: {slots} slots, "
          f"fp8 scaled_mm {record['fp8_scaled_mm']}", flush=True)  # fmt: skip
    prompts = draw_workload(slots).prompts(32_000)
    records = []
    for options in variants:
        records.append(variant(torch, model, slots, options, prompts, args.steps))
        print(table(records)[-1], flush=True)
    record["variants"] = [
        {k: v for k, v in r.items() if not k.startswith("after_")} for r in records
    ]
    record["table"] = table(records)  # as printed
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print("\n" + "\n".join(table(records)))
    for r in records:
        if "kernels" in r:  # which attention kernel ran shows here (math: bmm and softmax)
            print(f"\n{r['options']}: host {r['kernels']['host_ms_per_step']} ms a step; "
                  f"{r['graphs']} graphs; top kernels (GPU ms a step):")  # fmt: skip
            print("\n".join(kernel_lines(r["kernels"]["top"])))
        if "admission" in r:
            print(f"{r['options']}: {admission_line(r['admission'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
