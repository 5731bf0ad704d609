"""Build ONNX Runtime engines: an FP32 graph-optimized model, and an INT8 model by static QDQ
quantization calibrated on a calibration set.

INT8 uses uint8 activations and int8 per-channel weights: on x86 CPUs that runs about 3x faster
than FP32, where the quantizer's default (int8 activations) ran no faster (see docs/performance.md).
The tensor ranges from calibration are an artifact of their own (a JSON cache keyed by the model and
the calibration set), so an engine rebuilt for another reason does not calibrate again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

from mlperf_harness.engines.calibration import CalibrationSet

FP32_FILE = "model_fp32_opt.onnx"
INT8_FILE = "model_int8_qdq.onnx"
CALIBRATION_METHOD = "minmax-strided"
CALIBRATION_BATCH = 10
CALIBRATION_STRIDE = 20  # samples per calibration pass: bounds the memory the calibrator keeps


def build_fp32(model_path: Path, out_dir: Path) -> str:
    options = ort.SessionOptions()
    # EXTENDED, not ALL: the layout transforms of ALL are tied to the machine that ran them.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(out_dir / FP32_FILE)
    ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    return FP32_FILE


def calibration_key(model_sha256: str, calibration: CalibrationSet) -> str:
    identity = f"{model_sha256}:{calibration.sha256}:{CALIBRATION_METHOD}:uint8"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


class _StridedReader(CalibrationDataReader):  # type: ignore[misc]
    """Feeds calibration batches to ONNX Runtime's calibrator (strided, so it keeps few outputs)."""

    def __init__(self, input_name: str, batches: list[npt.NDArray[np.float32]]) -> None:
        self._input_name = input_name
        self._batches = batches
        self._start, self._end = 0, len(batches)
        self._position = 0

    def get_next(self) -> dict[str, npt.NDArray[np.float32]] | None:
        if self._position >= min(self._end, len(self._batches)):
            return None
        batch = self._batches[self._position]
        self._position += 1
        return {self._input_name: batch}

    def __len__(self) -> int:
        return len(self._batches)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._start, self._end = start_index, end_index
        self._position = start_index

    def rewind(self) -> None:
        self._position = self._start


def build_int8(
    model_path: Path, out_dir: Path, calibration: CalibrationSet, calibration_cache: Path
) -> str:
    input_name = onnx.load(str(model_path), load_external_data=False).graph.input[0].name
    reader = None
    if not calibration_cache.is_file():  # else quantize_static reads the ranges from the cache
        reader = _StridedReader(input_name, calibration.batches(CALIBRATION_BATCH))
    calibration_cache.parent.mkdir(parents=True, exist_ok=True)
    quantize_static(
        model_path,
        out_dir / INT8_FILE,
        calibration_data_reader=reader,
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        # The stride counts reader items (batches): calibrate 20 images at a time.
        extra_options={"CalibStridedMinMax": CALIBRATION_STRIDE // CALIBRATION_BATCH},
        calibration_cache_path=calibration_cache,
    )
    return INT8_FILE
