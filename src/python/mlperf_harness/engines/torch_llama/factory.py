"""Makes the torch Llama engine for a run (benchmarks/llama2_70b/engines.py, --backend torch):
Llama-2-70B's shape with seeded random weights drawn on the GPU (the real-size stand-in: timing
only), FP8 weights with per-channel scales where torch._scaled_mm runs (Hopper) and bf16 elsewhere,
an FP8 KV cache in as many slots as fill the GPU; on one GPU, or tensor parallel over
`tensor_parallel` GPUs (parallel.py). A small Llama with the NumPy model's seeded weights
(`ModelSource.small`) is the other model it builds: the checks against the NumPy model, on a GPU
or on the CPU, alone or tensor parallel.

Where each rank runs is chosen once (`rank_device`): CUDA GPU `rank` with NCCL between ranks, or
the CPU with gloo where no GPU is (each rank then takes its share of the cores)."""

from __future__ import annotations

import atexit
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from mlperf_harness.benchmarks.llama2_70b.model import LLAMA2_70B, LlamaShape, random_weights
from mlperf_harness.engines.fp8_linear import Linear, fp8_layers
from mlperf_harness.engines.on_gpu import OnGpu
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.module import Parallel, TorchLlama, from_tensors
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.engines.torch_llama.weights import numpy_tensors, random_tensors
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine

REAL_SIZE_SEED = 0
RESERVE_GIB = 8.0  # beside the cache: prefill activations of a 1,024-token prompt, the logits
BACKENDS = {"cuda": "nccl", "cpu": "gloo"}  # torch.distributed's, by where the ranks run


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
    make_linear: Callable[..., Linear] = Linear  # Linear(weight): the weight as it is
    if precision == "fp8":
        make_linear = fp8_layers(torch, device, dtype, "torch_llama")
    elif precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    else:
        raise HarnessError(f"the torch Llama engine runs fp8, bf16 or fp16, not {precision}")
    tensor = random_tensors(torch, shape, device, dtype, seed, parallel)
    return from_tensors(torch, shape, tensor, make_linear, parallel)


def slots_fitting(free: float, one: int) -> int:
    """The slots whose caches of `one` byte each fit in `free` bytes beside RESERVE_GIB, less the
    cache's scratch row (cache.py); below 1 where none fits."""
    return int((free - RESERVE_GIB * 2**30) // one) - 1


@dataclass(frozen=True)
class ModelSource:
    """What every rank builds: the real-size stand-in (Llama-2-70B's shape, weights drawn on a CUDA
    GPU from `seed`, in `precision`, an FP8 cache), or with `small` that shape with the NumPy
    model's weights of `seed` (random_weights) in float32 and a float32 cache: its tokens are the
    NumPy model's. Written as arguments for tensor parallelism's workers (`argv`, `from_argv`)."""

    precision: str = "fp8"
    small: LlamaShape | None = None
    seed: int = REAL_SIZE_SEED

    @property
    def shape(self) -> LlamaShape:
        return self.small or LLAMA2_70B

    @property
    def kv_fp8(self) -> bool:
        return self.small is None

    def argv(self) -> list[str]:
        small = ["--small", json.dumps(asdict(self.small))] if self.small else []
        return ["--precision", self.precision, "--seed", str(self.seed), *small]

    @classmethod
    def from_argv(cls, precision: str, seed: int, small: str | None) -> ModelSource:
        return cls(precision, LlamaShape(**json.loads(small)) if small else None, seed)

    def build(self, torch: Any, device: Any, parallel: Parallel) -> TorchLlama:
        if self.small is None:
            if device.type != "cuda":
                raise HarnessError(
                    "the real-size Llama stand-in is drawn on a CUDA GPU; on the CPU use "
                    "--backend onnxruntime"
                )
            return random_llama(torch, LLAMA2_70B, device, self.precision, self.seed, parallel)
        weights = random_weights(self.small, self.seed)
        tensor = numpy_tensors(torch, weights, self.small, device, torch.float32, parallel)
        return from_tensors(torch, self.small, tensor, lambda w: Linear(weight=w), parallel)


def rank_device(torch: Any, kind: str, rank: int, world: int, first_gpu: int = 0) -> Any:
    """Rank `rank`'s device: CUDA GPU `first_gpu + rank` (made current; `first_gpu` its group's
    first), or the CPU, where the `world` ranks share the cores (each its part, at least one
    thread)."""
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise HarnessError("the torch Llama engine was asked for a CUDA GPU and none is here")
        torch.cuda.set_device(first_gpu + rank)
        return torch.device("cuda", first_gpu + rank)
    if kind != "cpu":
        raise HarnessError(f"the torch Llama engine runs on cuda or cpu, not {kind}")
    if world > 1:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    return torch.device("cpu")


def default_device(torch: Any) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


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
    source: ModelSource, options: EngineOptions | None = None, device_kind: str = "cuda",
    port: int | None = None, first_gpu: int = 0,
) -> TorchLlamaEngine:  # fmt: skip
    """One rank's engine (world 1: the only one), its group joined at 127.0.0.1:`port` over the
    backend of `device_kind` (BACKENDS) where world > 1, on GPU `first_gpu + rank`; `slots` None:
    as many as fill the GPU."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    device = rank_device(torch, device_kind, rank, world, first_gpu)
    parallel = Parallel()
    if world > 1:
        torch.distributed.init_process_group(
            BACKENDS[device_kind], init_method=f"tcp://127.0.0.1:{port}", rank=rank,
            world_size=world,
        )  # fmt: skip
        # Rank 0 tells the workers each call over a CPU group of its own (gloo; on the CPU too, so
        # the tests run this path): NCCL's broadcast would reach a worker only once rank 0's GPU
        # had done all it had queued, so the worker could not queue its share of a step while the
        # GPUs still ran the last one.
        control = torch.distributed.new_group(backend="gloo")
        parallel = Parallel(rank, world, torch.distributed.group.WORLD, control)
    model = source.build(torch, device, parallel)
    if slots is None:
        if device.type != "cuda":
            raise HarnessError("the torch Llama engine on the CPU needs its slot count given")
        slots = slots_to_fill(torch, device, LLAMA2_70B, max_prompt + max_new, world)
    return TorchLlamaEngine(model, slots, max_prompt, max_new, eos_id, source.kv_fp8, options)


def create_llama_engine(
    *,
    max_prompt: int,
    max_new: int,
    eos_id: int,
    slots: int | None,
    gpu: int = 0,
    precision: str = "fp8",
    tensor_parallel: int = 1,
    source: ModelSource | None = None,
    options: EngineOptions | None = None,
    device_kind: str | None = None,
) -> DecoderEngine:
    """The engine of GPU `gpu` (one per GPU: each serving loop drives its own), or with
    `tensor_parallel` > 1 rank 0 of a group over GPUs gpu..gpu+tensor_parallel-1 (one per group);
    `source` None: the real-size stand-in in `precision`. `device_kind` None: cuda where torch
    sees a GPU, else cpu (a CPU group: `tensor_parallel` processes on this host's cores)."""
    import torch  # pants: no-infer-dep

    source = source or ModelSource(precision)
    kind = device_kind or default_device(torch)
    if tensor_parallel == 1:
        if kind == "cpu":
            return build_rank(0, 1, slots, max_prompt, max_new, eos_id, source, options, kind)
        with torch.cuda.device(gpu):
            engine = build_rank(gpu, 1, slots, max_prompt, max_new, eos_id, source, options)
        return OnGpu(engine, torch, gpu)
    from mlperf_harness.engines.torch_llama.parallel import TensorParallelEngine, start_workers

    Parallel(0, tensor_parallel).check(source.shape)  # before any process starts
    if slots is None and kind == "cuda":  # every rank the same count: rank 0 sizes it for all
        free, _ = torch.cuda.mem_get_info(gpu)
        weights = 70e9 / tensor_parallel * (1 if source.precision == "fp8" else 2)
        one = kv_bytes_per_slot(LLAMA2_70B, max_prompt + max_new, tensor_parallel, True)
        slots = max(1, slots_fitting(free - weights, one))
    if slots is None:
        raise HarnessError("the torch Llama engine on the CPU needs its slot count given")
    argv = [
        *("--slots", str(slots), "--max_prompt", str(max_prompt), "--max_new", str(max_new)),
        *("--eos_id", str(eos_id), "--device", kind, "--first_gpu", str(gpu), *source.argv()),
        *("--options", (options or EngineOptions()).text),
    ]
    workers = start_workers(tensor_parallel, argv)
    with workers.call("starting"):  # a worker that dies before joining ends the wait
        engine = build_rank(
            0, tensor_parallel, slots, max_prompt, max_new, eos_id, source, options, kind,
            workers.port, gpu,
        )  # fmt: skip
    parallel = TensorParallelEngine(engine, workers)
    atexit.register(parallel.close)  # the workers wait for rank 0's calls: tell them to stop
    return parallel if kind == "cpu" else OnGpu(parallel, torch, gpu)
