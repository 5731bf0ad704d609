"""GPT-J's torch engine on a GPU host, as benchmarks/gptj/device/engine.sh runs it: a table of

1. equality: the small fitted stand-in (check_inputs' model and held-out prompts) decoded by the
   engine through the in-flight scheduler, in fp32, fp16 and fp8, against the reference beam search
   over the same ONNX graph on ONNX Runtime (CPU): how many prompts give the same tokens (fp32 must
   give all; fp16 may part on near-ties; fp8 is another model, its weights quantized: it parts
   more, and says whether its products ran on torch._scaled_mm);
2. timing, once per precision of --precisions (default fp16, fp8 and fp8-static: a table row
   each; fp8-static is fp8 with static activation scales, calibrated first on the real-size
   stand-in's own seeded prompts, calibrate.py): GPT-J 6B's
   shape with seeded random weights made on the GPU, slots sized to fill its memory, a seeded
   workload (timing_workload: CNN-DailyMail-like prompt lengths, output lengths forced around 69)
   decoded to the end through the scheduler: samples/s, tokens/s (samples x 69, as LoadGen infers
   GPT-J's tokens), the run's GPU time split by call (CUDA events: prefill, decode steps, beam
   top-k, GPU idle between calls; call_split.py), the decode step per slot count, prefill, and
   --single_samples samples decoded one at a time (SingleStream's latency from the engine alone).

Where the GPU time goes inside a decode step and a prefill, kernel by kernel: device_profile.py.

`python -m mlperf_harness.engines.torch_gptj.device_check --check_dir DIR [--samples N]
 [--precisions fp16,fp8,fp8-static] [--out result.json] [--skip_equality] [--skip_timing]`
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.gptj.decoding import beam_search, gptj_config
from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.engines.call_split import CudaMarks, HostMarks, SplitEngine
from mlperf_harness.engines.fp8_linear import STATIC
from mlperf_harness.engines.gpu_timing import gpu_ms
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout, slots_to_fill
from mlperf_harness.engines.torch_gptj.calibrate import record_amax, with_static_scales
from mlperf_harness.engines.torch_gptj.calibration_set import real_size_calibration
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.factory import REAL_SIZE_SEED, RESERVE_GIB
from mlperf_harness.engines.torch_gptj.module import TorchGptj, from_weights, random_gptj
from mlperf_harness.engines.torch_gptj.precision import FP8, check_precision
from mlperf_harness.engines.torch_gptj.timing_workload import draw_workload
from mlperf_harness.engines.torch_gptj.weights import stand_in_weights
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import Int64Array
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.timing_workload import TimingWorkload

GPTJ_EOS = 50256  # GPT-J's <|endoftext|>
TOKENS_PER_SAMPLE = 69  # LoadGen's token_latency_scaling_factor for GPT-J
MODEL_FILE, PROMPTS_FILE = "model.onnx", "prompts.npz"  # check_inputs writes them
FP8_STATIC = "fp8-static"  # a timing row: fp8 with static activation scales


def read_check_inputs(directory: Path) -> tuple[bytes, list[Int64Array], int]:
    """check_inputs' model bytes, prompts and EOS id (read here: that module needs `tokenizers`,
    which GPU hosts lack)."""
    if not (directory / MODEL_FILE).is_file() or not (directory / PROMPTS_FILE).is_file():
        raise HarnessError(
            f"{directory} lacks {MODEL_FILE} or {PROMPTS_FILE}: make them with "
            f"`python -m mlperf_harness.engines.torch_gptj.check_inputs --out {directory}`"
        )
    with np.load(directory / PROMPTS_FILE) as archive:
        count = sum(1 for name in archive.files if name.startswith("prompt_"))
        prompts = [archive[f"prompt_{i}"] for i in range(count)]
        eos = int(archive["eos_id"])
    return (directory / MODEL_FILE).read_bytes(), prompts, eos


def equality(
    torch: Any,
    check_dir: Path,
    device: str = "cuda",
    precisions: tuple[str, ...] = ("fp32", "fp16", "fp8"),
    count: int = 8,
) -> dict[str, Any]:
    model_bytes, prompts, eos = read_check_inputs(check_dir)
    prompts = prompts[:count]
    import onnx

    weights, shape = stand_in_weights(onnx.load_from_string(model_bytes))
    config = gptj_config(eos)
    session = OrtGptj(model_bytes, shape, threads=8)
    started = time.perf_counter()
    expected = [beam_search(session, prompt, config) for prompt in prompts]
    reference_s = time.perf_counter() - started
    longest = max(p.size for p in prompts)
    out: dict[str, Any] = {
        "prompts": len(prompts),
        "prompt_tokens": [int(p.size) for p in prompts],
        "reference": "beam search 4 over the stand-in's ONNX graph on ONNX Runtime (CPU)",
        "reference_seconds": round(reference_s, 2),
        "output_tokens": [len(e) for e in expected],
    }
    for precision in precisions:
        model = from_weights(torch, weights, shape, torch.device(device), precision)
        layout = CacheLayout(slots=6, beams=4, max_prompt=longest, max_new=128)
        engine = TorchGptjEngine(model, layout, eos)
        started = time.perf_counter()
        got = generate(engine, prompts, config)
        seconds = time.perf_counter() - started
        same = [g == e for g, e in zip(got, expected, strict=True)]
        first_difference = [
            next(
                (i for i, (a, b) in enumerate(zip(g, e, strict=False)) if a != b),
                min(len(g), len(e)),
            )
            for g, e, s in zip(got, expected, same, strict=True)
            if not s
        ]
        out[precision] = {
            "same_tokens": int(sum(same)),
            "flash_attention": engine.flash,
            "prompt_attention": engine.prompt_kernel,
            "cuda_graphs": sorted(engine.graphs),
            "fp8_products": fp8_products(model),
            "first_difference_at": first_difference,
            "seconds": round(seconds, 2),
        }
        del engine, model
        if device == "cuda":
            torch.cuda.empty_cache()
    return out


def fp8_products(model: TorchGptj) -> str | None:
    """How the model's FP8 projections multiply (None: it has none)."""
    layer = model.blocks[0].qkv_in
    if layer.weight8 is None:
        return None
    if layer.activation_scale == STATIC:
        how = (
            "torch._scaled_mm, tensor-wise" if layer.scaled_mm else "float32 fallback (no speed-up)"
        )
        return f"{how}, static activation scales"
    return "torch._scaled_mm" if layer.scaled_mm else "dequantized per product (no speed-up)"


def engine_precision(timing_precision: str) -> str:
    """The engine precision of a timing row: fp8-static is fp8 with static activation scales."""
    return FP8 if timing_precision == FP8_STATIC else timing_precision


def real_size_engine(
    torch: Any, precision: str, slots: int | None, max_prompt: int
) -> tuple[TorchGptjEngine, dict[str, Any]]:
    """GPT-J 6B's shape with seeded random weights made on the GPU, its engine with `slots` slots
    (None: as many as fill the GPU), and what was made: sizes, times, kernels chosen."""
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    weights = engine_precision(precision)
    model = random_gptj(torch, GPTJ_6B, torch.device("cuda"), weights, REAL_SIZE_SEED)
    torch.cuda.synchronize()
    weights_s = time.perf_counter() - started
    calibrated: dict[str, Any] = {}
    if precision == FP8_STATIC:  # its own seeded prompts, decoded as a run's (no artifact kept)
        started = time.perf_counter()
        calibration = real_size_calibration()
        model = with_static_scales(model, record_amax(model, calibration, GPTJ_EOS))
        calibrated = {
            "static_scales": f"calibrated in {time.perf_counter() - started:.1f} s on "
            + calibration.description
        }
    weights_gib = torch.cuda.memory_allocated() / 2**30
    free, total = torch.cuda.mem_get_info()
    if slots is None:
        reserve = int(RESERVE_GIB * 2**30)
        slots = slots_to_fill(free, GPTJ_6B, 4, max_prompt, 128, weights, reserve)
    layout = CacheLayout(slots=slots, beams=4, max_prompt=max_prompt, max_new=128)
    started = time.perf_counter()
    engine = TorchGptjEngine(model, layout, GPTJ_EOS)
    build_s = time.perf_counter() - started
    return engine, {
        "model": f"GPT-J 6B shape, seeded random weights in {precision} (stand-in: not a valid "
        "MLPerf result)",
        "precision": precision,
        "fp8_products": fp8_products(model),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "flash_attention": engine.flash,
        "prompt_attention": engine.prompt_kernel,
        "step_ms_by_prompt_kernel": engine.kernel_step_ms,
        "slots": slots,
        "max_prompt": max_prompt,
        "gpu_memory_gib": {
            "weights": round(weights_gib, 1),
            "free_after_weights": round(free / 2**30, 1),
            "total": round(total / 2**30, 1),
        },
        "weights_seconds": round(weights_s, 1),
        "engine_build_seconds": round(build_s, 1),
    } | calibrated


def timed_run(
    torch: Any, engine: TorchGptjEngine, workload: TimingWorkload, on_gpu: bool = True
) -> dict[str, Any]:
    """The workload decoded to the end through the scheduler after a warm-up: rates, and the run's
    GPU time split by call (call_split.py: CUDA events, not the host's clock; on the CPU, the tests,
    the host's clock is the device's)."""
    prompts = workload.prompts(engine.model.shape.vocab_size)
    base = gptj_config(engine.eos_id)
    configs = [base.forced(int(n)) for n in workload.output_lengths]
    warm = min(engine.slots, 16)  # every prefill and decode path once (kernels, allocator grown)
    generate(engine, prompts[:warm], [base.forced(30)] * warm)
    split = SplitEngine(engine, CudaMarks(torch) if on_gpu else HostMarks())
    synchronize = torch.cuda.synchronize if on_gpu else (lambda: None)
    synchronize()
    started = time.perf_counter()
    outputs = generate(split, prompts, configs)
    synchronize()
    run_s = time.perf_counter() - started
    if [len(o) for o in outputs] != workload.output_lengths.tolist():
        raise HarnessError("the timed run's outputs are not of the forced lengths")
    samples, generated = len(prompts), int(workload.output_lengths.sum())
    calls = split.calls()
    return {
        "workload": workload.describe(),
        "samples": samples,
        "seconds": round(run_s, 2),
        "samples_per_second": round(samples / run_s, 2),
        "tokens_per_second_x69": round(samples * TOKENS_PER_SAMPLE / run_s, 1),
        "generated_tokens_per_second": round(generated / run_s, 1),
        "gpu_split_seconds": {k: round(v, 3) for k, v in split.split(run_s).items()},
        "calls": calls,
        "prompts_per_prefill": round(split.prompts / max(1, calls["prefill"]), 2),
    }


def one_at_a_time(
    torch: Any, engine: TorchGptjEngine, workload: TimingWorkload, count: int, on_gpu: bool = True
) -> dict[str, Any]:
    """The first `count` samples of the workload decoded one at a time, each alone in the engine
    (as SingleStream sends them): the latency of one sample, start to last token, to set beside the
    harness's SingleStream percentiles (the harness draws its own lengths from the same
    distribution, so the ms per generated token compares most directly)."""
    prompts = workload.prompts(engine.model.shape.vocab_size)[:count]
    lengths = workload.output_lengths[:count]
    base = gptj_config(engine.eos_id)
    synchronize = torch.cuda.synchronize if on_gpu else (lambda: None)
    latencies = []
    for prompt, length in zip(prompts, lengths, strict=True):
        synchronize()
        started = time.perf_counter()
        (output,) = generate(engine, [prompt], [base.forced(int(length))])
        synchronize()
        latencies.append(time.perf_counter() - started)
        if len(output) != length:
            raise HarnessError("a sample decoded alone is not of its forced length")
    ms = np.array(latencies) * 1000
    return {
        "samples": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p90_ms": round(float(np.percentile(ms, 90)), 1),
        "mean_output_tokens": round(float(lengths.mean()), 1),
        "ms_per_generated_token": round(float(ms.sum() / lengths.sum()), 2),
    }


def timing(
    torch: Any, samples: int, slots: int | None, precision: str = "fp16", single: int = 0
) -> dict[str, Any]:
    workload = draw_workload(samples, seed=0)
    engine, made = real_size_engine(torch, precision, slots, int(workload.prompt_lengths.max()))
    run = timed_run(torch, engine, workload)
    if single:
        run["one_sample_at_a_time"] = one_at_a_time(torch, engine, workload, single)
    made["gpu_memory_gib"]["peak"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    # The decode step alone per slot count (every slot at its scratch step, the last prompts'
    # lengths in the cache), and prefill alone on 32 workload prompts.
    engine.step_in.copy_(
        torch.from_numpy(engine.book.step_input([], *(np.zeros((0, 4), np.int64),) * 2))
    )
    steps = {
        count: round(gpu_ms(torch, graph.replay, 10), 3) for count, graph in engine.graphs.items()
    }
    few = workload.prompts(GPTJ_6B.vocab_size)[:32]
    prefill_slots = list(range(len(few)))

    def prefill_once() -> None:
        engine.prefill(prefill_slots, few)
        engine.release(prefill_slots)

    prefill_ms = gpu_ms(torch, prefill_once, 3)
    prefill_tokens = sum(p.size for p in few)
    return (
        made
        | run
        | {
            "decode_step_ms_by_slots": steps,
            "prefill_ms_per_prompt": round(prefill_ms / len(few), 2),
            "prefill_tokens_per_second": round(prefill_tokens / (prefill_ms / 1000), 0),
        }
    )


def print_table(result: dict[str, Any]) -> None:
    eq = result.get("equality")
    if isinstance(eq, dict) and "fp32" in eq:
        print(f"| stand-in equality ({eq['prompts']} held-out prompts, {eq['reference']}) | |")
        for precision in ("fp32", "fp16", "fp8"):
            r = eq.get(precision)
            if r is None:
                continue
            fp8 = f", FP8 products {r['fp8_products']}" if r.get("fp8_products") else ""
            print(
                f"| {precision}: same tokens | {r['same_tokens']}/{eq['prompts']} "
                f"(flash {r['flash_attention']}, graphs {r['cuda_graphs']}{fp8}, "
                f"first differences at {r['first_difference_at']}) |"
            )
    timed = {
        name: t
        for name, t in result.items()
        if name.startswith("timing") and isinstance(t, dict) and "samples_per_second" in t
    }
    if timed:
        print(
            "| precision | samples/s | tokens/s (x69) | slots | weights GiB | step ms, all slots |"
        )
        for t in timed.values():
            step = t["decode_step_ms_by_slots"].get(t["slots"], "-")
            print(
                f"| {t['precision']} | {t['samples_per_second']} | {t['tokens_per_second_x69']} | "
                f"{t['slots']} | {t['gpu_memory_gib']['weights']} | {step} |"
            )
    for t in timed.values():
        print(f"| 6B engine alone, {t['precision']} ({t['gpu']}, {t['slots']} slots x 4 beams) | |")
        if t["fp8_products"]:
            print(f"| FP8 products | {t['fp8_products']} |")
        if "static_scales" in t:
            print(f"| static activation scales | {t['static_scales']} |")
        print(f"| workload | {t['workload']} |")
        print(
            f"| samples/s | {t['samples_per_second']} ({t['samples']} samples in {t['seconds']} s) |"
        )
        print(f"| tokens/s (samples x 69) | {t['tokens_per_second_x69']} |")
        print(f"| generated tokens/s | {t['generated_tokens_per_second']} |")
        print(f"| GPU time split (s, CUDA events) | {split_text(t['gpu_split_seconds'])} |")
        print(f"| decode step ms by slots | {t['decode_step_ms_by_slots']} |")
        print(
            f"| prompt attention kernel | {t['prompt_attention']} (full step ms, half-length "
            f"prompts: {t['step_ms_by_prompt_kernel']}) |"
        )
        print(
            f"| prefill | {t['prefill_ms_per_prompt']} ms/prompt, {t['prefill_tokens_per_second']} tokens/s |"
        )
        if one := t.get("one_sample_at_a_time"):
            print(
                f"| one sample at a time ({one['samples']}, mean {one['mean_output_tokens']} "
                f"tokens) | p50 {one['p50_ms']} ms, p90 {one['p90_ms']} ms, "
                f"{one['ms_per_generated_token']} ms/generated token |"
            )
    for phase, value in result.items():
        if isinstance(value, str):
            print(f"| {phase} FAILED | {value} |")


# call_split's kinds of call as the tables name them
SPLIT_NAMES = {
    "prefill": "prefill",
    "advance": "decode steps",
    "candidates": "beam top-k (candidates)",
    "idle": "GPU idle between calls",
}


def split_text(split: dict[str, float]) -> str:
    """call_split's seconds as printed: what each kind of call held the GPU for."""
    return ", ".join(f"{SPLIT_NAMES.get(k, k)} {v}" for k, v in split.items())


def precision_list(text: str) -> tuple[str, ...]:
    """--precisions: comma-separated, each one the engine runs or fp8-static (else one line)."""
    try:
        names = tuple(p.strip() for p in text.split(",") if p.strip())
        for name in names:
            check_precision(engine_precision(name))
        return names
    except HarnessError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="device_check", description=__doc__)
    parser.add_argument("--check_dir", type=Path)
    parser.add_argument("--samples", type=positive_int, default=512)
    parser.add_argument("--slots", type=positive_int, default=None)
    parser.add_argument("--equality_prompts", type=positive_int, default=8)
    parser.add_argument(
        "--precisions",
        type=precision_list,
        default=("fp16", "fp8", FP8_STATIC),
        help="the timing phase's precisions, comma-separated: one run and table row each "
        "(fp8-static: fp8 with static activation scales calibrated on seeded prompts first)",
    )
    parser.add_argument(
        "--single_samples",
        type=int,
        default=16,
        help="after each timed run, this many samples decoded one at a time (SingleStream's "
        "latency from the engine alone; 0: none)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--skip_equality", action="store_true")
    parser.add_argument("--skip_timing", action="store_true")

    def body() -> int:
        args = parser.parse_args(argv)
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32: the equality check
        torch.backends.cudnn.allow_tf32 = False
        result: dict[str, Any] = {}
        phases: list[tuple[str, Callable[[], dict[str, Any]], bool]] = [
            (
                "equality",
                lambda: equality(torch, args.check_dir, count=args.equality_prompts),
                args.skip_equality,
            ),
        ]
        phases += [
            (
                f"timing_{precision}",
                functools.partial(
                    timing, torch, args.samples, args.slots, precision, args.single_samples
                ),
                args.skip_timing,
            )
            for precision in args.precisions
        ]
        for name, run, skip in phases:
            if skip:
                continue
            try:
                result[name] = run()
            except Exception:  # one phase's failure must not hide the other's figures
                traceback.print_exc()
                result[name] = traceback.format_exc().strip().splitlines()[-1]
            torch.cuda.empty_cache()
            if args.out is not None:
                write_json_atomic(args.out, result)
        print(json.dumps(result, indent=1))
        print_table(result)
        return 0 if all(not isinstance(v, str) for v in result.values()) else 1

    return run_entry_point("device_check", body)


if __name__ == "__main__":
    sys.exit(main())
