"""ONNX models that this project writes itself (stand-ins, test graphs): one way to wrap a graph."""

from __future__ import annotations

from collections.abc import Mapping

import onnx
from onnx import helper


def make_model(
    graph: onnx.GraphProto, opset: int, *, doc: str = "", metadata: Mapping[str, str] | None = None
) -> onnx.ModelProto:
    """`graph` as a model of the default domain's `opset`, at the oldest IR version that holds that
    opset rather than onnx's newest, so that older runtimes (ONNX Runtime, TensorRT) load it too."""
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="mlperf_harness",
        doc_string=doc,
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    if metadata:
        helper.set_model_props(model, dict(metadata))
    return model
