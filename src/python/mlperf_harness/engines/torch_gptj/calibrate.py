"""Static FP8 activation scales for GPT-J's torch engine: each projection's input maximum recorded
while the FP8 model (its weights quantized, its activations still row-wise) decodes the calibration
samples as a run does, prefill and every decode step of a beam search (4 beams, 30..128 new
tokens, or the real-size stand-in's forced lengths), then fixed into the layers as scale =
amax / 448 (engines/fp8_linear.py's "static" form). `static_scales_for` reads the maxima from their
artifact or records them there first (scale_artifact.py).

The recording engine runs eager (no CUDA graphs: every step's maxima are taken in place on the
device, read back once at the end) with a few slots, and is dropped before the run's engine sizes
its cache to the GPU's free memory.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

import sys

from mlperf_harness.benchmarks.gptj.decoding import MAX_NEW_TOKENS, gptj_config
from mlperf_harness.engines.fp8_linear import scaled_mm_unavailable
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout
from mlperf_harness.engines.torch_gptj.calibration_set import GptjCalibration, StaticScalesPlan
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.module import TorchGptj
from mlperf_harness.engines.torch_gptj.scale_artifact import cached_amax
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.scheduler import generate

CALIBRATION_SLOTS = 8  # samples decoded together while recording


def record_amax(
    model: TorchGptj, calibration: GptjCalibration, eos_id: int, slots: int = CALIBRATION_SLOTS
) -> dict[str, float]:
    """max |x| of each projection's input over the calibration samples' prefill and decode."""
    torch = model.torch
    recording = model.with_projections(lambda _name, layer: layer.recording(torch))
    layers = recording.projections()
    prompts = list(calibration.prompts)
    layout = CacheLayout(min(slots, len(prompts)), 4, max(p.size for p in prompts), MAX_NEW_TOKENS)
    config = gptj_config(eos_id)
    configs = (
        config
        if calibration.forced_lengths is None
        else [config.forced(n) for n in calibration.forced_lengths]
    )
    engine = TorchGptjEngine(recording, layout, eos_id, cuda_graphs=False)
    with torch.inference_mode():
        generate(engine, prompts, configs)
    amax = {name: float(layer.amax) for name, layer in layers.items()}
    del engine, recording, layers
    if model.device.type == "cuda":
        torch.cuda.empty_cache()  # the recording cache's memory, before the run sizes its own
    return amax


def with_static_scales(model: TorchGptj, amax: dict[str, float]) -> TorchGptj:
    """The FP8 model with each projection's activations quantized by its fixed scale. Where its
    layers run _scaled_mm, the tensor-wise product (the static form's) is probed first: a torch
    without it is refused in one line."""
    torch = model.torch
    layers = model.projections()
    if any(layer.weight8 is None for layer in layers.values()):
        raise HarnessError("static FP8 activation scales need the FP8 model (--precision fp8)")
    if any(layer.scaled_mm for layer in layers.values()):
        why_not = scaled_mm_unavailable(torch, model.device, model.dtype, "tensor")
        if why_not is not None:
            raise HarnessError(f"--fp8_activations static does not run here: {why_not}")
    return model.with_projections(lambda name, layer: layer.with_static_scale(torch, amax[name]))


def static_scales_for(model: TorchGptj, plan: StaticScalesPlan, eos_id: int) -> TorchGptj:
    """`model` with static scales from the plan's artifact, calibrated and written first where it
    is absent (or unusable)."""
    amax = cached_amax(
        plan.path,
        list(model.projections()),
        plan.model_id,
        plan.calibration.sha256,
        plan.calibration.description,
        lambda: record_amax(model, plan.calibration, eos_id),
    )
    values = list(amax.values())
    print(
        f"gptj: static FP8 activation scales of {len(values)} projections (input maxima "
        f"{min(values):.3g}..{max(values):.3g}) from {plan.path}",
        file=sys.stderr,
    )
    return with_static_scales(model, amax)
