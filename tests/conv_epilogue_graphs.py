"""A small ONNX graph of residual blocks for the convolution epilogue tests
(engines/torch_aot/conv_epilogue.py): convolutions that fuse with their ReLU or residual Add and
ReLU, and ones that must not."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv(
    name: str, x: str, channels: tuple[int, int], **attrs: object
) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    """A 3x3 Conv (1x1 where kernel=1) `name` of x with constant weights and bias."""
    kernel = int(attrs.pop("kernel", 3))  # type: ignore[call-overload]
    rng = np.random.default_rng(sum(map(ord, name)))
    out, inp = channels
    weights = [
        numpy_helper.from_array(
            (rng.standard_normal((out, inp, kernel, kernel)) * 0.3).astype(np.float32), f"{name}_w"
        ),
        numpy_helper.from_array(rng.standard_normal(out).astype(np.float32), f"{name}_b"),
    ]
    pads = [kernel // 2] * 4
    node = helper.make_node(
        "Conv",
        [x, f"{name}_w", f"{name}_b"],
        [name],
        name=name,
        pads=attrs.pop("pads", pads),
        **attrs,  # type: ignore[arg-type]
    )
    return node, weights


def residual_model() -> onnx.ModelProto:
    """x [N, 8, 12, 12]: a Conv+Relu (a); a block whose two convolutions both feed its Add (b2 and
    the 1x1 shortcut s), then Relu; a Conv+Add+Relu with the block's output as residual (c); a
    Conv read by two nodes (d); a Conv with asymmetric padding before a Relu (e); a Conv+Relu
    whose convolution is also a graph output (f)."""
    parts = [
        conv("a", "x", (8, 8)),
        conv("b2", "ar", (8, 8)),
        conv("s", "ar", (8, 8), kernel=1),
        conv("c", "br", (8, 8)),
        conv("d", "cr", (8, 8)),
        conv("e", "dsum", (8, 8), pads=[1, 1, 0, 0]),
        conv("f", "er", (8, 8), pads=[0, 0, 0, 0]),
    ]
    nodes = [
        parts[0][0],
        helper.make_node("Relu", ["a"], ["ar"]),
        parts[1][0],
        parts[2][0],
        helper.make_node("Add", ["b2", "s"], ["bsum"]),
        helper.make_node("Relu", ["bsum"], ["br"]),
        parts[3][0],
        helper.make_node("Add", ["br", "c"], ["csum"]),
        helper.make_node("Relu", ["csum"], ["cr"]),
        parts[4][0],
        helper.make_node("Relu", ["d"], ["dr"]),
        helper.make_node("Add", ["d", "dr"], ["dsum"]),
        parts[5][0],
        helper.make_node("Relu", ["e"], ["er"]),
        parts[6][0],
        helper.make_node("Relu", ["f"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "residual",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 12, 12])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("f", TensorProto.FLOAT, None),
        ],
        [init for _, inits in parts for init in inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
