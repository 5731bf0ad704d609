"""An int8 copy of the BERT stand-in for bert-99 on CPU: static QDQ quantization by ONNX Runtime,
calibrated on a few SQuAD features, with the input names of MLPerf's int8 BERT model.

MLPerf's reference feeds its quantized model `input_ids`, `attention_mask` and `token_type_ids`
(the fp32 model's `input_mask` and `segment_ids` renamed), and reads the outputs by position; the
copy follows it. Activations are uint8 and weights int8 per channel, the combination that runs
fast on x86 (DESIGN.md); the MatMuls are quantized, the embedding Gathers, LayerNorms and Softmax
stay fp32.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks.bert.span_head import SpanFeatures
from mlperf_harness.benchmarks.bert.stand_in_model import INPUT_IDS, INPUT_MASK, SEGMENT_IDS
from mlperf_harness.errors import HarnessError

INT8_INPUT_RENAMES = {INPUT_MASK: "attention_mask", SEGMENT_IDS: "token_type_ids"}
INT8_INPUT_NAMES = (INPUT_IDS, *INT8_INPUT_RENAMES.values())
CALIBRATION_WINDOWS = 32  # features the ranges are taken from
CALIBRATION_BATCH = 8  # the calibrator keeps every intermediate tensor of a batch: keep it small


def rename_inputs(model: onnx.ModelProto, renames: Mapping[str, str]) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs (and every use of them) carry the new names."""
    renamed = onnx.ModelProto()
    renamed.CopyFrom(model)
    for value in renamed.graph.input:
        value.name = renames.get(value.name, value.name)
    for node in renamed.graph.node:
        node.input[:] = [renames.get(name, name) for name in node.input]
    return renamed


class _FeatureReader(CalibrationDataReader):  # type: ignore[misc]
    def __init__(self, features: SpanFeatures, windows: int) -> None:
        feeds = []
        for rows, inputs in features.batches(CALIBRATION_BATCH):
            if rows.start >= windows:
                break
            feeds.append({INT8_INPUT_RENAMES.get(k, k): v for k, v in inputs.items()})
        self._feeds = iter(feeds)

    def get_next(self) -> dict[str, npt.NDArray[np.int64]] | None:
        return next(self._feeds, None)


def quantize_int8(
    model: onnx.ModelProto,
    calibration: SpanFeatures,
    out_path: Path,
    windows: int = CALIBRATION_WINDOWS,
) -> None:
    """Write the QDQ int8 copy of `model` (official fp32 interface) to `out_path`, atomically."""
    calibration.check()
    if windows < 1 or len(calibration.input_ids) == 0:
        raise HarnessError("int8 calibration needs at least one feature")
    source = rename_inputs(model, INT8_INPUT_RENAMES)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # The quantizer works with files: give it a private directory beside the output.
    with tempfile.TemporaryDirectory(prefix=f".{out_path.name}.", dir=out_path.parent) as work:
        source_path, quantized_path = Path(work) / "fp32.onnx", Path(work) / "int8.onnx"
        onnx.save(source, str(source_path))
        quantize_static(
            source_path,
            quantized_path,
            calibration_data_reader=_FeatureReader(calibration, windows),
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
        )
        write_bytes_atomic(out_path, quantized_path.read_bytes())
