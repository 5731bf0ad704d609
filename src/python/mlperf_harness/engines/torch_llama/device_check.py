"""The torch Llama engine on a GPU host, alone (benchmarks/llama2-70b/device/gpu_scenarios.sh):

1. equality: a tiny seeded Llama (the NumPy model's weights) decoded greedily by the engine on the
   GPU in float32 against the NumPy model through the CPU engine: the same tokens for every prompt
   (checks the GPU path of the module, the cache and grouped-query attention);
2. timing: Llama-2-70B's shape with seeded random weights drawn on the GPU (FP8 where
   torch._scaled_mm runs), as many slots as fill it, the real-size workload of `--samples` samples
   (benchmarks/llama2_70b/real_size.py: output lengths FORCED to a seeded draw of mean about 294)
   run through the in-flight scheduler to the end: tokens/s and samples/s, the engine alone.

With `--tensor_parallel N` both run on one engine over GPUs 0..N-1 (parallel.py: NCCL, the
engine's CUDA graphs with the all-reduces captured in them), built as a run builds it
(factory.create_llama_engine).

Writes one JSON record and prints a table. Ran on one H200 (docs/llama2-70b.md has what it said).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from mlperf_harness.benchmarks.llama2_70b.decoding import MAX_NEW_TOKENS, llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape, random_weights
from mlperf_harness.benchmarks.llama2_70b.real_size import draw_workload
from mlperf_harness.benchmarks.llama2_70b.session import numpy_llama
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.factory import ModelSource, create_llama_engine
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.generation.engine import DecoderEngine, close_engine
from mlperf_harness.generation.scheduler import Finished, StepTimes, generate
from mlperf_harness.generation.step_engine import StepModelEngine

TINY = LlamaShape(
    layers=2, hidden=64, heads=8, kv_heads=2, inner=96, vocab_size=97, max_positions=128
)
TINY_SEED = 3


def equality(
    prompts: int, options: EngineOptions, tensor_parallel: int, device_kind: str = "cuda"
) -> dict[str, object]:
    """In float32 (FlashAttention has none: packed attention's graphs need it, so those run eager)."""
    weights = random_weights(TINY, TINY_SEED)
    eos = 5
    config = llama2_config(eos)
    rng = np.random.default_rng(9)
    batch = [
        rng.integers(0, TINY.vocab_size, int(n)).astype(np.int64)
        for n in rng.integers(1, 40, prompts)
    ]
    configs = [config.forced(int(n)) for n in rng.integers(2, 40, prompts)]
    if options.attention == "packed" and options.graphs:
        options = replace(options, graphs=False)
    # The fused inputs exist only for FP8 products, which this float32 model has none of ("auto"
    # leaves them out): their kernels are checked against the torch reference in tests/.
    options = replace(options, fused=None)
    engine = create_llama_engine(
        max_prompt=48, max_new=48, eos_id=eos, slots=4, tensor_parallel=tensor_parallel,
        source=ModelSource(small=TINY, seed=TINY_SEED), options=options, device_kind=device_kind,
    )  # fmt: skip
    try:
        gpu = generate(engine, batch, configs)
    finally:
        close_engine(engine)  # a group's workers end before the timing's group starts
    cpu = generate(
        StepModelEngine(numpy_llama(weights, TINY), eos, slots=4, beams=1, max_length=96),
        batch,
        configs,
    )
    same = sum(a == b for a, b in zip(gpu, cpu, strict=True))
    return {
        "prompts": prompts,
        "same_tokens": same,
        "options": options.name,
        "tensor_parallel": tensor_parallel,
    }


def rank_0_engine(engine: DecoderEngine) -> TorchLlamaEngine:
    """The torch engine inside a run's wrappers (OnGpu; tensor parallelism's rank 0)."""
    while not isinstance(engine, TorchLlamaEngine):
        engine = engine.engine  # type: ignore[attr-defined]
    return engine


WARM_UP_PROMPTS, WARM_UP_TOKENS = 16, 8
PROGRESS_SECONDS = 15.0


class Progress:
    """A line every PROGRESS_SECONDS while the workload runs: a call cut short still says how fast
    it went."""

    def __init__(self, started: float, samples: int, times: StepTimes) -> None:
        self.started, self.samples, self.times = started, samples, times
        self.done = self.tokens = self.tokens_shown = 0
        self.shown = started

    def on_event(self, event: object) -> None:
        if not isinstance(event, Finished):
            return
        self.done += 1
        self.tokens += len(event.tokens)
        now = time.perf_counter()
        if now - self.shown >= PROGRESS_SECONDS:
            seconds = now - self.started
            # since the last line too: past the ramp, the steady rate a call cut short reached
            recent = (self.tokens - self.tokens_shown) / (now - self.shown)
            self.shown, self.tokens_shown = now, self.tokens
            print(f"  {self.done}/{self.samples} samples in {seconds:.0f} s: "
                  f"{self.tokens / seconds:.1f} tokens/s of finished samples "
                  f"({recent:.1f} since the last line); {self.times.line()}",
                  flush=True)  # fmt: skip


def timing(
    samples: int, slots: int | None, precision: str, options: EngineOptions, admit_batch: int = 1,
    tensor_parallel: int = 1,
) -> dict[str, object]:  # fmt: skip
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    workload = draw_workload(samples)
    started = time.perf_counter()
    engine = create_llama_engine(
        max_prompt=1024, max_new=MAX_NEW_TOKENS, eos_id=2, slots=slots,
        tensor_parallel=tensor_parallel, source=ModelSource(precision), options=options,
    )  # fmt: skip
    local = rank_0_engine(engine)
    built = time.perf_counter() - started
    config = llama2_config(2)
    prompts = workload.prompts(32_000)
    configs = [config.forced(int(n)) for n in workload.output_lengths]
    print(f"engine built in {built:.1f} s: {engine.slots} slots", flush=True)
    warm = min(engine.slots, WARM_UP_PROMPTS)  # kernels and cuBLAS's choices, not a full batch
    generate(engine, prompts[:warm], [config.forced(WARM_UP_TOKENS)] * warm)
    torch.cuda.synchronize()
    started = time.perf_counter()
    times = StepTimes()
    progress = Progress(started, len(prompts), times)
    outputs = generate(engine, prompts, configs, progress.on_event, times, admit_batch)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    close_engine(engine)
    tokens = sum(len(out) for out in outputs)
    first = local.model.blocks[0].qkv
    return {
        "workload": workload.describe(),
        "precision": precision,
        "options": local.options.name,  # as the engine resolved them (fused=auto)
        "admit_batch": admit_batch,
        "tensor_parallel": tensor_parallel,
        "fp8_scaled_mm": bool(first.weight8 is not None and first.scaled_mm),
        "slots": engine.slots,
        "build_seconds": round(built, 1),
        "seconds": round(seconds, 2),
        "tokens": tokens,
        "tokens_per_second": round(tokens / seconds, 1),
        "samples_per_second": round(len(outputs) / seconds, 2),
        "gpu_memory_gib": round(torch.cuda.max_memory_allocated(0) / 2**30, 1),  # rank 0's
        "step_ms": times.per_step_ms(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_llama.device_check")
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--slots", type=int)
    parser.add_argument("--precision", default="fp8")
    parser.add_argument("--equality_prompts", type=int, default=16)
    parser.add_argument(
        "--options",
        default="",
        help="the engine's options (options.py), e.g. prefill=packed,graphs=1",
    )
    parser.add_argument(
        "--admit_batch", type=int, default=1, help="the scheduler's (the runs' --admit_batch)"
    )
    parser.add_argument(
        "--tensor_parallel", type=int, default=1, help="GPUs of one engine (GPUs 0..N-1)"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    options = EngineOptions.parse(args.options)
    import torch  # pants: no-infer-dep

    record = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "equality": equality(args.equality_prompts, options, args.tensor_parallel),
    }
    print(f"equality: {record['equality']}", flush=True)
    record["timing"] = timing(
        args.samples, args.slots, args.precision, options, args.admit_batch, args.tensor_parallel
    )
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    t = record["timing"]
    assert isinstance(t, dict)
    print(f"{'engine alone':<24}{t['tokens_per_second']:>12} tokens/s {t['samples_per_second']:>8} "
          f"samples/s  {t['slots']} slots, {t['precision']} (scaled_mm {t['fp8_scaled_mm']}), "
          f"{t['gpu_memory_gib']} GiB, {t['options']}, admit_batch {t['admit_batch']}, "
          f"tensor parallel {t['tensor_parallel']}; "
          f"{t['workload']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
