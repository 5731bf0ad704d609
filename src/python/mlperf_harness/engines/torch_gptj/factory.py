"""One function that makes GPT-J's torch engine for a run (what benchmarks/gptj/engines.py's
`gptj_engine_factory` calls for `--backend torch`): MLCommons' checkpoint (a Hugging Face directory,
`checkpoint_loader`), the stand-in's ONNX graph, or GPT-J 6B's shape with seeded random weights made
on the GPU (`real_size`, for timing), on one CUDA device (a run makes one per GPU), with as many
slots as fill its memory unless `slots` is given; in fp16 (the configs' choice), bf16, fp32, or fp8
(FP8 projection weights, precision.py), whose activations are quantized per row on the fly, or by
static scales calibrated on the plan's samples (`static`: calibrate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B
from mlperf_harness.engines.on_gpu import OnGpu
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout, slots_to_fill
from mlperf_harness.engines.torch_gptj.calibration_set import StaticScalesPlan
from mlperf_harness.engines.torch_gptj.checkpoint_loader import load_checkpoint
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.module import REAL_SIZE_SEED, from_weights, random_gptj
from mlperf_harness.engines.torch_gptj.precision import FP8, check_precision
from mlperf_harness.engines.torch_gptj.weights import stand_in_weights
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine

RESERVE_GIB = 6.0  # beside the cache: prefill activations, the decode graphs, held logits
__all__ = ["REAL_SIZE_SEED", "RESERVE_GIB", "create_gptj_engine"]


def create_gptj_engine(
    model: Path | None,
    *,
    beams: int,
    max_prompt: int,
    max_new: int,
    eos_id: int,
    slots: int | None = None,
    precision: str = "fp16",
    real_size: bool = False,
    gpu: int = 0,
    static: StaticScalesPlan | None = None,
) -> DecoderEngine:
    """The engine on CUDA device `gpu` (one per GPU: each serving loop drives its own); `static`:
    fp8 with static activation scales from that plan's calibration artifact."""
    check_precision(precision)
    if static is not None and precision != FP8:
        raise HarnessError(f"static FP8 activation scales need precision fp8, not {precision}")
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    if not torch.cuda.is_available():
        raise HarnessError("the torch GPT-J engine needs a CUDA GPU; on the CPU use onnxruntime")
    with torch.cuda.device(gpu):
        engine = _create_on_current_gpu(
            torch, model, beams, max_prompt, max_new, eos_id, slots, precision, real_size, static
        )
    return OnGpu(engine, torch, gpu)


def _create_on_current_gpu(
    torch: Any,
    model: Path | None,
    beams: int,
    max_prompt: int,
    max_new: int,
    eos_id: int,
    slots: int | None,
    precision: str,
    real_size: bool,
    static: StaticScalesPlan | None = None,
) -> TorchGptjEngine:
    import onnx

    from mlperf_harness.engines.torch_gptj.calibrate import static_scales_for

    device = torch.device("cuda", torch.cuda.current_device())
    net: Any
    if real_size:
        net, shape = random_gptj(torch, GPTJ_6B, device, precision, REAL_SIZE_SEED), GPTJ_6B
    elif model is not None and model.is_dir():
        net = load_checkpoint(torch, model, device, precision)
        shape = net.shape
    else:
        if model is None or not model.is_file():
            raise HarnessError(f"no GPT-J stand-in model at {model}")
        weights, shape = stand_in_weights(onnx.load(str(model)))
        net = from_weights(torch, weights, shape, device, precision)
    if static is not None:
        net = static_scales_for(net, static, eos_id)
    if slots is None:
        free, _ = torch.cuda.mem_get_info(device)
        slots = slots_to_fill(
            free, shape, beams, max_prompt, max_new, precision, int(RESERVE_GIB * 2**30)
        )
    return TorchGptjEngine(net, CacheLayout(slots, beams, max_prompt, max_new), eos_id)
