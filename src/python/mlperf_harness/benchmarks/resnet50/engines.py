"""ResNet-50's engine for a backend and precision: the one function both the harness (before a
run) and `generate_engines` (ahead of time, and in Pants engine targets) call."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.backends.registry import WITHOUT_ENGINE
from mlperf_harness.benchmarks.resnet50 import configs, resources
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import CalibrationSet
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.engines.tensorrt.engine import tensorrt_engine, tensorrt_engine_spec
from mlperf_harness.engines.torch_aot.engine import torch_engine, torch_engine_spec
from mlperf_harness.errors import HarnessError

CALIBRATED = ("int8", "fp8")  # the precisions whose activation scales come from calibration


def resnet50_engine(
    backend: str,
    precision: str,
    model: resources.ModelChoice,
    data: resources.DataChoice,
    scratch: Path,
    engine_root: Path,
    batch_size: int = 1,
    calibration: CalibrationSet | None = None,
) -> tuple[Path, bool]:
    """(engine file, whether it was built now). The null and sim backends need none: the model is
    returned.

    batch_size is TensorRT's profile maximum and the batch a torch engine is compiled for; ONNX
    Runtime engines keep the dynamic batch dimension and serve every batch size. int8 and fp8
    engines are calibrated on `calibration`, else on resources.choose_calibration's choice.
    """
    if backend in WITHOUT_ENGINE:  # null, sim: no model runs
        return model.path, False
    if backend not in ("onnxruntime", "tensorrt", "torch"):
        raise HarnessError(f"no {backend} engine builder for {configs.NAME} in this build")
    cache = EngineCache(engine_root)
    if precision in CALIBRATED and calibration is None:
        calibration = resources.choose_calibration(model, data, scratch)
    elif precision not in CALIBRATED:
        calibration = None
    if backend == "torch":  # compiled ahead of time for one batch size; fp8 calibrated, no int8
        torch_spec = torch_engine_spec(
            configs.NAME, model.sha256, precision, batch_size, calibration=calibration
        )
        return torch_engine(cache, torch_spec, model.path, calibration)
    if backend == "tensorrt":
        trt_spec = tensorrt_engine_spec(
            configs.NAME, model.sha256, precision, batch_size, calibration
        )
        return tensorrt_engine(cache, trt_spec, model.path, calibration)
    spec = onnxruntime_engine_spec(configs.NAME, model.sha256, precision, calibration)
    return onnxruntime_engine(cache, spec, model.path, calibration)
