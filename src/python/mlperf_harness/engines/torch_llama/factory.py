"""Makes the torch Llama engine for a run (benchmarks/llama2_70b/engines.py, --backend torch):
Llama-2-70B's shape with seeded random weights drawn on the GPU (the real-size stand-in: timing
only), FP8 weights with per-channel scales where torch._scaled_mm runs (Hopper) and bf16 elsewhere,
an FP8 KV cache in as many slots as fill the GPU; on one GPU, or tensor parallel over `tensor_parallel`
GPUs (parallel.py: written, never run)."""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

from mlperf_harness.benchmarks.llama2_70b.model import LLAMA2_70B, LlamaShape
from mlperf_harness.engines.fp8_linear import Linear, quantize, scaled_mm_unavailable
from mlperf_harness.engines.on_gpu import OnGpu
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.module import Parallel, TorchLlama, from_tensors
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.engines.torch_llama.weights import random_tensors
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine

REAL_SIZE_SEED = 0
RESERVE_GIB = 8.0  # beside the cache: prefill activations of a 1,024-token prompt, the logits
TP_PORT = 29511


def kv_bytes_per_slot(shape: LlamaShape, length: int, world: int, kv_fp8: bool) -> int:
    """One slot's keys and values on one rank: layers x 2 x length x kv_heads / world x head_dim."""
    per_value = 1 if kv_fp8 else 2
    return shape.layers * 2 * length * (shape.kv_heads // world) * shape.head_dim * per_value


def random_llama(
    torch: Any, shape: LlamaShape, device: Any, precision: str, seed: int, parallel: Parallel
) -> TorchLlama:
    """The seeded random model on `device`: every weight drawn there in bf16 and, in fp8, quantized
    at once (one layer's bf16 weight alive at a time)."""
    dtype = torch.bfloat16
    if precision == "fp8":
        why_not = scaled_mm_unavailable(torch, device)
        if why_not is not None:  # every product then reads its weight dequantized: say so
            print(
                f"torch_llama: FP8 weights dequantized for every product ({why_not})",
                file=sys.stderr,
            )
        fast = why_not is None

        def make_linear(weight: Any) -> Linear:
            return quantize(torch, weight, fast)
    elif precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16

        def make_linear(weight: Any) -> Linear:
            return Linear(weight=weight)
    else:
        raise HarnessError(f"the torch Llama engine runs fp8, bf16 or fp16, not {precision}")
    tensor = random_tensors(torch, shape, device, dtype, seed, parallel)
    return from_tensors(torch, shape, tensor, make_linear, parallel)


def slots_fitting(free: float, one: int) -> int:
    """The slots whose caches of `one` byte each fit in `free` bytes beside RESERVE_GIB, less the
    cache's scratch row (cache.py); below 1 where none fits."""
    return int((free - RESERVE_GIB * 2**30) // one) - 1


def slots_to_fill(torch: Any, device: Any, shape: LlamaShape, length: int, world: int) -> int:
    free, _ = torch.cuda.mem_get_info(device)
    one = kv_bytes_per_slot(shape, length, world, kv_fp8=True)
    slots = slots_fitting(free, one)
    if slots < 1:
        raise HarnessError(
            f"the GPU has {free / 2**30:.1f} GiB free: not enough for one Llama slot of "
            f"{one / 2**30:.2f} GiB beside {RESERVE_GIB:g} GiB of working memory"
        )
    return slots


def build_rank(
    rank: int, world: int, slots: int | None, max_prompt: int, max_new: int, eos_id: int,
    precision: str, options: EngineOptions | None = None,
) -> TorchLlamaEngine:  # fmt: skip
    """One rank's engine on GPU `rank` (world 1: the only one)."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    if not torch.cuda.is_available():
        raise HarnessError("the torch Llama engine needs a CUDA GPU; on the CPU use onnxruntime")
    torch.cuda.set_device(rank)
    parallel = Parallel()
    if world > 1:
        torch.distributed.init_process_group("nccl", rank=rank, world_size=world)
        parallel = Parallel(rank, world, torch.distributed.group.WORLD)
    device = torch.device("cuda", rank)
    model = random_llama(torch, LLAMA2_70B, device, precision, REAL_SIZE_SEED, parallel)
    if slots is None:
        slots = slots_to_fill(torch, device, LLAMA2_70B, max_prompt + max_new, world)
    return TorchLlamaEngine(model, slots, max_prompt, max_new, eos_id, True, options)


def create_llama_engine(
    *,
    max_prompt: int,
    max_new: int,
    eos_id: int,
    slots: int | None,
    gpu: int = 0,
    precision: str = "fp8",
    tensor_parallel: int = 1,
) -> DecoderEngine:
    """The engine of GPU `gpu` (one per GPU: each serving loop drives its own), or with
    `tensor_parallel` > 1 rank 0 of a group over GPUs 0..tensor_parallel-1 (the caller makes one)."""
    import torch  # pants: no-infer-dep

    if tensor_parallel == 1:
        with torch.cuda.device(gpu):
            engine = build_rank(gpu, 1, slots, max_prompt, max_new, eos_id, precision)
        return OnGpu(engine, torch, gpu)
    from mlperf_harness.engines.torch_llama.parallel import TensorParallelEngine, start_workers

    if slots is None:  # every rank the same count: rank 0 sizes it for all, before they allocate
        free, _ = torch.cuda.mem_get_info(0)
        weights = 70e9 / tensor_parallel * (1 if precision == "fp8" else 2)
        one = kv_bytes_per_slot(LLAMA2_70B, max_prompt + max_new, tensor_parallel, True)
        slots = max(1, slots_fitting(free - weights, one))
    argv = [
        *("--slots", str(slots), "--max_prompt", str(max_prompt), "--max_new", str(max_new)),
        *("--eos_id", str(eos_id), "--precision", precision),
    ]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(TP_PORT))
    workers = start_workers(tensor_parallel, int(os.environ["MASTER_PORT"]), argv)
    engine = build_rank(0, tensor_parallel, slots, max_prompt, max_new, eos_id, precision)
    parallel = TensorParallelEngine(engine, workers)
    atexit.register(parallel.close)  # the workers wait for rank 0's calls: tell them to stop
    return OnGpu(parallel, torch, 0)
