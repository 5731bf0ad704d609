"""The convolution epilogue A/B's cases (engines/conv_epilogue_ab.conv_cases): each distinct 2-D
convolution of an ONNX graph counted with its input shape at the batch asked for and what follows
it, read from the graph alone (the timing needs a GPU and is not run here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.engines.conv_epilogue_ab import (
    ADD_RELU,
    NONE,
    RELU,
    ConvCase,
    conv_cases,
    summary,
)
from mlperf_harness.errors import HarnessError


def _conv(name: str, x: str, w: str, out: str, **attrs: Any) -> onnx.NodeProto:
    return helper.make_node("Conv", [x, w, f"{w}_b"], [out], name=name, **attrs)


def _weights(name: str, shape: Sequence[int]) -> list[onnx.TensorProto]:
    rng = np.random.default_rng(len(name))
    return [
        numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name),
        numpy_helper.from_array(np.zeros(shape[0], np.float32), f"{name}_b"),
    ]


def _model() -> onnx.ModelProto:
    """x [N, 8, 16, 16]: a 3x3 + Relu twice with the same shapes (one case, counted twice), a 1x1
    whose output is added to the input then Relu'd, a strided grouped 3x3 read by two nodes (no
    epilogue), and the graph's output."""
    nodes = [
        _conv("a", "x", "wa", "a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"]),
        _conv("b", "ar", "wb", "b", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["b"], ["br"]),
        _conv("c", "br", "wc", "c"),
        helper.make_node("Add", ["c", "x"], ["cx"]),
        helper.make_node("Relu", ["cx"], ["cr"]),
        _conv("d", "cr", "wd", "d", pads=[1, 1, 1, 1], strides=[2, 2], group=4),
        helper.make_node("Relu", ["d"], ["dr"]),
        helper.make_node("Add", ["d", "dr"], ["y"]),
    ]
    initializers = [
        *_weights("wa", (8, 8, 3, 3)),
        *_weights("wb", (8, 8, 3, 3)),
        *_weights("wc", (8, 8, 1, 1)),
        *_weights("wd", (8, 2, 3, 3)),
    ]
    graph = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_each_distinct_convolution_is_counted_with_its_epilogue() -> None:
    cases = conv_cases(_model(), batch=4)

    assert cases == {
        ConvCase((4, 8, 16, 16), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1, RELU): 2,
        ConvCase((4, 8, 16, 16), (8, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1, ADD_RELU): 1,
        ConvCase((4, 8, 16, 16), (8, 2, 3, 3), (2, 2), (1, 1), (1, 1), 4, NONE): 1,
    }
    labels = sorted(case.label() for case in cases)
    assert labels == [
        "8->8 1x1/1 @16x16 +add_relu",
        "8->8 3x3/1 @16x16 +relu",
        "8->8 3x3/2 g4 @16x16 +none",
    ]


def test_a_graph_without_convolutions_is_one_line() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(HarnessError, match="no 2-D convolution"):
        conv_cases(helper.make_model(graph), batch=2)


def test_the_summary_weights_each_convolution_by_its_count() -> None:
    def times(inductor: float, fused: float) -> dict[str, float]:
        return {
            "inductor": inductor,
            "cudnn fused": fused,
            "inductor benchmark": inductor / 2,
            "cudnn fused benchmark": fused / 4,
        }

    rows = [
        {"case": "a", "count": 8, "ms": times(0.5, 0.25)},
        {"case": "b", "count": 1, "ms": times(1.0, 2.0)},
        {"case": "c", "count": 3, "ms": {"inductor": 1.0}},
        {"case": "d", "count": 2, "ms": {}},
    ]
    line = summary({"batch": 8, "rows": rows})
    assert line == (
        "conv epilogue A/B, batch 8: 9 convolutions timed both ways; cuDNN's heuristics: "
        "inductor 5.000 ms, cudnn fused 4.000 ms (1.250x); cudnn.benchmark: inductor 2.500 ms, "
        "cudnn fused 1.000 ms (2.500x); 5 not (no epilogue, or a way failed)"
    )
