"""3D-UNet's engine for a backend and precision: the one function the harness (before a run) and
the device scripts call. ONNX Runtime's graph-optimized fp32 model on the CPU; on GPUs a torch
AOTInductor package of the same model (engines/torch_aot: ONNX -> torch, fp16, channels-last 3D)
per window batch size of GPU_WINDOW_BATCHES: the volume runner runs each batch of a volume's windows
on the smallest that holds it."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.benchmarks.unet3d import configs, resources
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.engines.torch_aot.engine import torch_engine, torch_engine_spec
from mlperf_harness.errors import HarnessError

# Windows per engine call on a GPU: a real-width window's activations are ~130 MB a tensor in fp16,
# so 4 windows fill an H200's SMs without crowding its memory; 1 and 2 for volumes (or their last
# batch) of fewer windows: with only a batch-4 engine, the stand-in's one-window volumes ran at 107
# windows/s against the engine's 181 (H200, 2026-11-23).
GPU_WINDOW_BATCHES = (1, 2, 4)


def unet3d_engines(
    backend: str, precision: str, model: resources.ModelChoice, engine_root: Path
) -> list[Path]:
    """The engine files of a run, largest batch first (one but for torch's ladder). The null
    backend needs none: the model is returned."""
    if backend == "null":
        return [model.path]
    cache = EngineCache(engine_root)
    if backend == "torch":
        specs = [
            torch_engine_spec(configs.NAME, model.sha256, precision, batch)
            for batch in sorted(GPU_WINDOW_BATCHES, reverse=True)
        ]
        return [torch_engine(cache, spec, model.path)[0] for spec in specs]
    if backend != "onnxruntime":
        raise HarnessError(f"no {backend} engine builder for {configs.NAME} in this build")
    if precision != "fp32":
        raise HarnessError(f"{configs.NAME} on onnxruntime is fp32 in this build, not {precision}")
    spec = onnxruntime_engine_spec(configs.NAME, model.sha256, precision, None)
    return [onnxruntime_engine(cache, spec, model.path, None)[0]]
