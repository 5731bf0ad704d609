"""RetinaNet's engine for a backend and precision: ONNX Runtime's graph-optimized fp32 model on the
CPU (the null backend needs none: the model is returned)."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.benchmarks.retinanet import configs, resources
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.errors import HarnessError


def retinanet_engine(
    backend: str, precision: str, model: resources.ModelChoice, engine_root: Path
) -> Path:
    if backend == "null":
        return model.path
    if backend != "onnxruntime":
        raise HarnessError(f"no {backend} engine builder for {configs.NAME} in this build")
    if precision != "fp32":
        raise HarnessError(f"{configs.NAME} on onnxruntime is fp32 in this build, not {precision}")
    spec = onnxruntime_engine_spec(configs.NAME, model.sha256, precision, None)
    return onnxruntime_engine(EngineCache(engine_root), spec, model.path, None)[0]
