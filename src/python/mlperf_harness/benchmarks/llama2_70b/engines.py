"""Llama2-70B's engine for a run's backend, made when the run starts: ONNX Runtime over the
stand-in's graph on the CPU; on GPUs, the torch engine (engines/torch_llama) over the real-size
stand-in (Llama-2-70B's shape, seeded random weights made on the GPU), one per GPU or one per group
of `tensor_parallel` GPUs (tensor parallel within it)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.llama2_70b.decoding import MAX_NEW_TOKENS
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape
from mlperf_harness.benchmarks.llama2_70b.session import ort_llama
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.step_engine import step_engine_makers


def llama2_engine_factory(
    backend: str,
    model: Path,
    stand_in_shape: LlamaShape | None,
    *,
    slots: int | None,
    max_length: int,
    eos_id: int,
    threads: int | None,
    workers: int | None = None,
    real_size: bool = False,
    precision: str | None = None,
    tensor_parallel: int = 1,
    prefill: str | None = None,
) -> Callable[[], list[Callable[[], DecoderEngine]]]:
    """What the run asks for its engines when it starts (PreparedRun.make_engines): a maker per
    serving loop (checked now: a wrong backend or model fails before the run starts)."""
    if backend == "onnxruntime":
        if real_size:
            raise HarnessError(
                f"{model} is the real-size stand-in (Llama-2-70B's shape, weights drawn on a GPU): "
                "it runs on --backend torch"
            )
        if stand_in_shape is None:
            raise HarnessError(
                f"{model} is Llama 2's checkpoint: it runs on the torch backend (GPUs, --backend "
                "torch); ONNX Runtime runs the stand-in"
            )
        return step_engine_makers(
            ort_llama,
            model.read_bytes(),
            stand_in_shape,
            threads=threads or 0,
            eos_id=eos_id,
            slots=slots or 1,
            beams=1,
            max_length=max_length,
            workers=workers or 1,
        )
    if backend == "torch":
        if not real_size:
            raise HarnessError(
                "the torch Llama engine runs the real-size stand-in (--model_path of a directory "
                "real_size.py wrote); loading Llama 2's checkpoint into it is not written yet"
            )

        torch_engine = functools.partial(
            _torch_engine,
            max_prompt=max_length - MAX_NEW_TOKENS,
            max_new=MAX_NEW_TOKENS,
            eos_id=eos_id,
            slots=slots,
            precision=precision or "fp8",
            tensor_parallel=tensor_parallel,
            options=EngineOptions(prefill=prefill).check() if prefill else None,
        )

        def per_gpu() -> list[Callable[[], DecoderEngine]]:
            from mlperf_harness.engines.torch_aot.torch_host import gpu_count

            # One engine per group of `tensor_parallel` GPUs (parallel.py), each group's serving
            # loop its own: data parallel over the groups.
            return [
                functools.partial(torch_engine, gpu=first)
                for first in tensor_parallel_groups(gpu_count(), tensor_parallel)
            ]

        return per_gpu
    raise HarnessError(
        f"llama2-70b runs on --backend onnxruntime (the CPU stand-in) or torch (GPUs), not {backend}"
    )


def tensor_parallel_groups(gpus: int, tensor_parallel: int) -> list[int]:
    """The first GPU of each tensor-parallel group of this host's `gpus`: 0, tp, 2 tp, ..."""
    if gpus < 1:
        raise HarnessError("the torch Llama engine needs a GPU, and torch sees none here")
    if gpus % tensor_parallel:
        raise HarnessError(
            f"--tensor_parallel {tensor_parallel} does not divide this host's {gpus} GPUs into"
            " groups (CUDA_VISIBLE_DEVICES can choose the GPUs a run uses)"
        )
    return list(range(0, gpus, tensor_parallel))


# A module-level function bound by functools.partial, so that it pickles: a run with
# --engine_processes sends its maker to the engine's own process (generation/engine_process.py).
def _torch_engine(**settings: Any) -> DecoderEngine:
    # Imported here: torch is the GPU host's, not a dependency of the CPU harness.
    from mlperf_harness.engines.torch_llama.factory import create_llama_engine

    return create_llama_engine(**settings)
