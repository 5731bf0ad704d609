"""ONNX models that this project writes itself (stand-ins, test graphs): one way to wrap a graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper


class GraphWriter:
    """Nodes and initializers of a graph being written from named weights: what each stand-in's
    graph writer (BERT's, GPT-J's) builds its layers on."""

    def __init__(self, weights: Mapping[str, npt.NDArray[np.float32]]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []

    def constant(self, name: str, value: npt.NDArray[Any]) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: Sequence[str], output: str, **attributes: Any) -> str:
        self.nodes.append(helper.make_node(op, list(inputs), [output], name=output, **attributes))
        return output


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
