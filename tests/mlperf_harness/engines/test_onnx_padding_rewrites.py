"""onnx_to_torch's padding rewrites, each checked by ONNX Runtime computing the same outputs before
and after: fold_pads (a zero Pad before convolutions, how tf2onnx writes TensorFlow's explicitly
padded convolutions, becomes their own padding; Pads that cannot fold stay) and explicit_pads
(SAME auto_pad on convolutions and max pools becomes the explicit pads it means, where the shapes
are known)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.engines.torch_aot.onnx_to_torch import explicit_pads, fold_pads

CHANNELS = 3


def _graph(
    opset: int,
    pads: list[int],
    *,
    value: float = 0.0,
    conv_attrs: dict[str, Any] | None = None,
    also_read_by_relu: bool = False,
) -> onnx.ModelProto:
    """x [1, 3, 11, 11] -> Pad -> Conv 3x3 stride 2 (-> and a Relu of the padded tensor) -> y."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(
        rng.standard_normal((4, CHANNELS, 3, 3)).astype(np.float32), "w"
    )
    initializers = [weights]
    if opset < 11:
        pad = helper.make_node("Pad", ["x"], ["padded"], pads=pads, value=value)
    else:
        initializers.append(numpy_helper.from_array(np.array(pads, dtype=np.int64), "pads"))
        initializers.append(numpy_helper.from_array(np.array(value, dtype=np.float32), "value"))
        pad = helper.make_node("Pad", ["x", "pads", "value"], ["padded"])
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], **(conv_attrs or {})}
    nodes = [pad, helper.make_node("Conv", ["padded", "w"], ["y"], **attrs)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h", "w"])]
    if also_read_by_relu:
        nodes.append(helper.make_node("Relu", ["padded"], ["r"]))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 3, "h", "w"]))
    graph = helper.make_graph(
        nodes,
        "pad_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, 11, 11])],
        outputs,
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def _run(model: onnx.ModelProto, x: npt.NDArray[np.float32]) -> list[npt.NDArray[Any]]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(out) for out in session.run(None, {"x": x})]


@pytest.mark.parametrize("opset", [8, 13])
@pytest.mark.parametrize(
    ("pads", "conv_attrs", "conv_pads"),
    [
        # TensorFlow's fixed_padding before a VALID convolution: 1 before, 1 after.
        ([0, 0, 1, 1, 0, 0, 1, 1], {"auto_pad": "VALID"}, [1, 1, 1, 1]),
        # Uneven, onto a convolution with padding of its own.
        ([0, 0, 0, 2, 0, 0, 1, 0], {"pads": [1, 1, 1, 1]}, [1, 3, 2, 1]),
    ],
)
def test_a_zero_pad_becomes_the_convolution_s_padding(
    opset: int, pads: list[int], conv_attrs: dict[str, Any], conv_pads: list[int]
) -> None:
    model = _graph(opset, pads, conv_attrs=conv_attrs)
    folded, count = fold_pads(model)
    assert count == 1
    assert [node.op_type for node in folded.graph.node] == ["Conv"]
    conv = folded.graph.node[0]
    assert conv.input[0] == "x"
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    assert list(attrs["pads"]) == conv_pads and "auto_pad" not in attrs
    assert {init.name for init in folded.graph.initializer} == {"w"}  # the Pad's constants went
    onnx.checker.check_model(folded)
    x = np.random.default_rng(1).standard_normal((1, CHANNELS, 11, 11)).astype(np.float32)
    (want,), (got,) = _run(model, x), _run(folded, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "case",
    [
        {"pads": [0, 0, 1, 1, 0, 0, 1, 1], "value": 0.5},  # pads with a value, not zeros
        {"pads": [0, 1, 1, 1, 0, 0, 1, 1]},  # pads the channels
        {"pads": [0, 0, 1, 1, 0, 0, 1, 1], "also_read_by_relu": True},  # a Relu reads it too
        {"pads": [0, 0, 1, 1, 0, 0, 1, 1], "conv_attrs": {"auto_pad": "SAME_UPPER"}},
    ],
)
def test_a_pad_that_is_not_the_convolutions_alone_stays(case: dict[str, Any]) -> None:
    model = _graph(13, **case)
    folded, count = fold_pads(model)
    assert count == 0
    assert [node.op_type for node in folded.graph.node] == [
        node.op_type for node in model.graph.node
    ]


def _same_graph(mode: str, size: int | str) -> onnx.ModelProto:
    """x [1, 3, size, size] -> Conv 3x3 stride 2 (auto_pad `mode`) -> MaxPool 3x3 stride 2 (the same)
    -> y; `size` a name: a spatial size shape inference cannot know."""
    weights = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((4, CHANNELS, 3, 3)).astype(np.float32), "w"
    )
    window: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": mode}
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], **window),
            helper.make_node("MaxPool", ["c"], ["y"], **window),
        ],
        "same",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h", "w"])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


@pytest.mark.parametrize(
    ("mode", "size", "pads"),
    [
        # 112 -> 56 -> 28 (the stem's pool in tf2onnx's SAME): the odd pixel of padding after.
        ("SAME_UPPER", 112, [[0, 0, 1, 1], [0, 0, 1, 1]]),
        ("SAME_LOWER", 112, [[1, 1, 0, 0], [1, 1, 0, 0]]),
        # 11 -> 6 (two pixels of padding, one each side) -> 3 (one, after).
        ("SAME_UPPER", 11, [[1, 1, 1, 1], [0, 0, 1, 1]]),
    ],
)
def test_same_padding_becomes_the_explicit_pads_it_means(
    mode: str, size: int, pads: list[list[int]]
) -> None:
    model = _same_graph(mode, size)
    explicit, count = explicit_pads(model)
    assert count == 2
    for node, want in zip(explicit.graph.node, pads, strict=True):
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        assert list(attrs["pads"]) == want and "auto_pad" not in attrs
    x = np.random.default_rng(2).standard_normal((1, CHANNELS, size, size)).astype(np.float32)
    (want_y,), (got_y,) = _run(model, x), _run(explicit, x)
    assert got_y.shape == want_y.shape
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-5)


def test_same_padding_of_an_unknown_size_stays() -> None:
    model = _same_graph("SAME_UPPER", "size")
    explicit, count = explicit_pads(model)
    assert count == 0
    for node in explicit.graph.node:
        assert (
            helper.get_attribute_value(next(a for a in node.attribute if a.name == "auto_pad"))
            == b"SAME_UPPER"
        )
