"""A small ONNX graph of ResNet-50's shapes of layers, for the FP8 planner and calibration tests: a
3-channel stem (Conv of stride 2, Relu, MaxPool of 3x3, stride 2, padding 1), one bottleneck with a
projection shortcut (1x1, 3x3, 1x1 plus a 1x1 shortcut, Add, Relu), one with an identity shortcut,
and the pooling head."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH = 32  # channels of the bottlenecks' inner convolutions (a multiple the FP8 engine needs)
INPUT = "image"
OUTPUT = "logits"


def bottleneck_graph(seed: int = 0, stem_stride: int = 2) -> onnx.ModelProto:
    """`stem_stride` 1 makes a stem the fused stem kernel does not compute (it takes stride 2): its
    max pool then stays a pool of its own."""
    rng = np.random.default_rng(seed)
    initializers: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv(name: str, x: str, c: int, k: int, size: int, stride: int = 1) -> str:
        weights = (rng.standard_normal((k, c, size, size)) / np.sqrt(c * size * size)).astype(
            np.float32
        )
        initializers.append(numpy_helper.from_array(weights, f"{name}/w"))
        initializers.append(
            numpy_helper.from_array((rng.standard_normal(k) * 0.1).astype(np.float32), f"{name}/b")
        )
        pad = size // 2
        nodes.append(
            helper.make_node(
                "Conv",
                [x, f"{name}/w", f"{name}/b"],
                [f"{name}/out"],
                kernel_shape=[size, size],
                strides=[stride, stride],
                pads=[pad] * 4,
            )
        )
        return f"{name}/out"

    def relu(x: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [f"{x}/relu"]))
        return f"{x}/relu"

    def block(name: str, x: str, c: int, shortcut: bool) -> str:
        y = relu(conv(f"{name}/conv1", x, c, WIDTH, 1))
        y = relu(conv(f"{name}/conv2", y, WIDTH, WIDTH, 3))
        y = conv(f"{name}/conv3", y, WIDTH, 4 * WIDTH, 1)
        skip = conv(f"{name}/shortcut", x, c, 4 * WIDTH, 1) if shortcut else x
        nodes.append(helper.make_node("Add", [y, skip], [f"{name}/add"]))
        return relu(f"{name}/add")

    stem = relu(conv("stem", INPUT, 3, WIDTH, 3, stride=stem_stride))
    nodes.append(
        helper.make_node(
            "MaxPool", [stem], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        )
    )
    x = block("block1", "pool", WIDTH, shortcut=True)
    x = block("block2", x, 4 * WIDTH, shortcut=False)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], [OUTPUT]))
    graph = helper.make_graph(
        nodes,
        "fp8_bottlenecks",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [None, 3, 32, 32])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [None, 4 * WIDTH])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
