"""GPT-J's engine for a run's backend, made when the run starts: ONNX Runtime over the stand-in's
graph on the CPU; on a GPU, the torch engine (engines/torch_gptj) over the stand-in, the real-size
stand-in or MLCommons' checkpoint."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.gptj.decoding import MAX_NEW_TOKENS
from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape
from mlperf_harness.engines.torch_gptj.calibration_set import StaticScalesPlan
from mlperf_harness.engines.torch_gptj.checkpoint_files import check_checkpoint
from mlperf_harness.engines.torch_gptj.precision import check_precision
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.step_engine import step_engine_makers


def gptj_engine_factory(
    backend: str,
    model: Path,
    stand_in_shape: GptjShape | None,
    *,
    slots: int | None,
    beams: int,
    max_length: int,
    eos_id: int,
    threads: int | None,
    workers: int | None = None,
    precision: str | None = None,
    real_size: bool = False,
    static: StaticScalesPlan | None = None,
) -> Callable[[], list[Callable[[], DecoderEngine]]]:
    """What the run asks for its engines when it starts (PreparedRun.make_engines): a maker per
    engine, each serving loop's (checked now: a wrong backend or model fails before the run
    starts). ONNX Runtime: `workers` engines (default one), each with `threads`; torch: one per
    GPU torch sees. `slots` None: one on the CPU, as many as fill each GPU's memory with torch.
    `real_size`: GPT-J 6B's shape with seeded random weights made on the GPU (timing only).
    `precision` (torch): fp16 (its default), bf16, fp32 or fp8 (FP8 projection weights); another is
    refused here, before the run starts. `static` (torch, fp8): the projections' activations by
    static scales from that plan's calibration artifact (made on the first GPU to get there)."""
    if backend == "onnxruntime":
        if static is not None:
            raise HarnessError("static FP8 activation scales are the torch backend's (a GPU)")
        if stand_in_shape is None:
            raise HarnessError(
                f"{model} is GPT-J's checkpoint: it runs on the torch backend (a GPU, "
                "--backend torch); ONNX Runtime runs the stand-in"
            )
        return step_engine_makers(
            OrtGptj,
            model.read_bytes(),
            stand_in_shape,
            threads=threads or 0,
            eos_id=eos_id,
            slots=slots or 1,
            beams=beams,
            max_length=max_length,
            workers=workers or 1,
        )
    if backend == "torch":
        torch_precision = check_precision(precision or "fp16")
        if stand_in_shape is None and not real_size:
            # Checked now, without torch: a checkpoint of another layout or with a shard missing
            # is refused before the run starts, not after the GPU is set up.
            check_checkpoint(model)

        torch_engine = functools.partial(
            _torch_engine,
            None if real_size else model,
            beams=beams,
            max_prompt=max_length - MAX_NEW_TOKENS,
            max_new=MAX_NEW_TOKENS,
            eos_id=eos_id,
            slots=slots,
            precision=torch_precision,
            real_size=real_size,
            static=static,
        )

        def per_gpu() -> list[Callable[[], DecoderEngine]]:
            from mlperf_harness.engines.torch_aot.torch_host import gpu_count

            return [functools.partial(torch_engine, gpu=gpu) for gpu in range(gpu_count())]

        return per_gpu
    raise HarnessError(
        f"gptj runs on --backend onnxruntime (the CPU stand-in) or torch (a GPU), not {backend}"
    )


# A module-level function bound by functools.partial, so that it pickles: a run with
# --engine_processes sends its maker to the engine's own process (generation/engine_process.py).
def _torch_engine(model: Path | None, **settings: Any) -> DecoderEngine:
    # Imported here: torch is the GPU host's, not a dependency of the CPU harness.
    from mlperf_harness.engines.torch_gptj.factory import create_gptj_engine

    return create_gptj_engine(model, **settings)
