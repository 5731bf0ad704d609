"""RetinaNet's engines for a backend and precision: ONNX Runtime's graph-optimized fp32 model on the
CPU, or its int8 model (QDQ, the convolutions but the class logits' quantized: quantization.py,
calibrated as ResNet-50's); on GPUs torch packages of the network with its postprocessing
(engines/torch_retinanet; in fp16, fp32, or fp8 calibrated as the int8 model), one per batch size
of the run's ladder (the null backend needs none: the model is returned)."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.benchmarks.retinanet import configs, resources
from mlperf_harness.benchmarks.retinanet.quantization import (
    INT8_OPERATORS,
    class_logit_convolutions,
)
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import CalibrationSet
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.engines.torch_aot.engine import engine_batch_sizes
from mlperf_harness.engines.torch_retinanet.build import check_precision as check_torch_precision
from mlperf_harness.engines.torch_retinanet.build import retinanet_torch_engine
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

ONNXRUNTIME_PRECISIONS = ("fp32", "int8")
# (backend, precision) pairs whose engines are calibrated (resources.choose_calibration).
CALIBRATED = (("onnxruntime", "int8"), ("torch", "fp8"))


def check_precision(backend: str, precision: str) -> None:
    """One line for a precision the backend has no engine for (before anything is built)."""
    if backend == "onnxruntime" and precision not in ONNXRUNTIME_PRECISIONS:
        raise HarnessError(
            f"{configs.NAME} on onnxruntime is {' or '.join(ONNXRUNTIME_PRECISIONS)}, not {precision}"
        )
    if backend == "torch":
        check_torch_precision(precision)


def retinanet_engines(
    backend: str,
    precision: str,
    model: resources.ModelChoice,
    engine_root: Path,
    scenario: Scenario,
    batch_size: int,
    calibration: CalibrationSet | None = None,
    nms: str = DEFAULT_NMS,
) -> list[Path]:
    """The engine files of a run, largest batch first (more than one only for torch's Server).
    An int8 or fp8 engine is calibrated on `calibration` (resources.choose_calibration); a torch
    engine has `nms`'s way built in (engines/torch_retinanet/nms_ways.py)."""
    if backend == "null":
        return [model.path]
    cache = EngineCache(engine_root)
    if backend == "torch":
        return [
            retinanet_torch_engine(
                cache, model.sha256, precision, size, model.path, nms, calibration
            )
            for size in engine_batch_sizes(backend, scenario, batch_size)
        ]
    if backend != "onnxruntime":
        raise HarnessError(f"no {backend} engine builder for {configs.NAME} in this build")
    check_precision(backend, precision)
    int8 = precision == "int8"
    calibration = calibration if int8 else None
    spec = onnxruntime_engine_spec(
        configs.NAME,
        model.sha256,
        precision,
        calibration,
        op_types=INT8_OPERATORS,
        fp32_nodes=class_logit_convolutions(model.path) if int8 else (),
    )
    return [onnxruntime_engine(cache, spec, model.path, calibration)[0]]
