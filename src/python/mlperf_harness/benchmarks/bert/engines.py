"""BERT's CPU engine for a precision, through the engine cache: the one function the harness calls
before a run. fp32 is ONNX Runtime's graph-optimized model; int8 quantizes its MatMuls (QDQ,
uint8 activations, int8 per-channel weights) with ranges calibrated on SQuAD features
(calibration.py), as MLPerf's int8 BERT leaves embeddings, LayerNorm and Softmax in fp32."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.benchmarks.bert import configs, resources
from mlperf_harness.benchmarks.bert.calibration import SquadCalibration
from mlperf_harness.benchmarks.bert.gpu_engines import bert_torch_engine
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.errors import HarnessError

INT8_OPERATORS = ("MatMul",)


def bert_engine(
    backend: str,
    precision: str,
    model: resources.ModelChoice,
    engine_root: Path,
    calibration: SquadCalibration | None = None,
) -> tuple[Path, bool]:
    """(engine file, whether it was built now). The null backend needs none: the model is
    returned. int8 is calibrated on `calibration` (calibration.choose_calibration's choice)."""
    if backend == "null":
        return model.path, False
    if backend == "torch":  # the encoder's weights in fp16; graphs are captured at load (GPU hosts)
        return bert_torch_engine(model.path, model.sha256, precision, engine_root)
    if backend != "onnxruntime":
        raise HarnessError(f"no {backend} engine builder for {configs.NAME} in this build")
    int8 = precision == "int8"
    if int8 and calibration is None:
        raise HarnessError("an int8 BERT engine needs its calibration features")
    calibration = calibration if int8 else None
    spec = onnxruntime_engine_spec(
        configs.NAME, model.sha256, precision, calibration, INT8_OPERATORS if int8 else None
    )
    return onnxruntime_engine(EngineCache(engine_root), spec, model.path, calibration)
