"""Small ONNX graphs that use every operator the torch converter supports, at several opsets.

Each operator appears in the form its opset gives it (attributes that later became inputs: Pad's
pads at 11, Squeeze/Unsqueeze axes at 13, ReduceMean axes at 18), with the variants ResNet-50 graphs
contain: explicit and SAME padding, uneven pads, grouped and strided convolutions, batch norms that
fold into a convolution and one that cannot, the TensorFlow head (ReduceMean, Squeeze, MatMul, Add)
beside the PyTorch one (GlobalAveragePool, Flatten, Gemm), a Shape/Gather/Concat/Reshape chain, and
from opset 11 RetinaNet's nearest Resize.
Tests check them against ONNX Runtime here; the device check compares the converted torch module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSETS = (8, 11, 13, 18)
RESIZE_SINCE = 11  # Resize's nearest_mode and coordinate transformation: opset 11 on
INPUT_NAME = "x"
INPUT_SHAPE = ("N", 3, 9, 9)  # the batch is dynamic in the ONNX graph
OUTPUTS = ("prob", "label")
CLASSES = 5


class _Builder:
    def __init__(self, opset: int, seed: int) -> None:
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, name: str, *shape: int, scale: float = 0.5) -> str:
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def batch_norm(self, x: str, name: str, channels: int) -> str:
        scale = self.weight(f"{name}/scale", channels)
        bias = self.weight(f"{name}/bias", channels)
        mean = self.weight(f"{name}/mean", channels)
        var = self.const(f"{name}/var", self.rng.uniform(0.5, 2.0, channels).astype(np.float32))
        return self.node("BatchNormalization", [x, scale, bias, mean, var], name, epsilon=1e-3)

    def axes_op(
        self, op: str, x: str, output: str, axes: list[int], since: int, **attrs: Any
    ) -> str:
        if self.opset < since:
            return self.node(op, [x], output, axes=axes, **attrs)
        axes_name = self.const(f"{output}/axes", np.array(axes, dtype=np.int64))
        return self.node(op, [x, axes_name], output, **attrs)


def coverage_graph(opset: int, seed: int = 0) -> onnx.ModelProto:
    """A graph of every supported operator: input `x` [N, 3, 9, 9], outputs `prob` and `label`."""
    b = _Builder(opset, seed)
    x = b.node("Transpose", [INPUT_NAME], "nhwc", perm=[0, 2, 3, 1])
    x = b.node("Transpose", [x], "nchw", perm=[0, 3, 1, 2])
    x = b.node("Cast", [x], "cast", to=TensorProto.FLOAT)
    pads = [0, 0, 1, 1, 0, 0, 1, 1]
    if opset < 11:
        x = b.node("Pad", [x], "pad", pads=pads, value=0.5)
    else:
        pads_name = b.const("pad/pads", np.array(pads, dtype=np.int64))
        value_name = b.const("pad/value", np.array(0.5, dtype=np.float32))
        x = b.node("Pad", [x, pads_name, value_name], "pad")
    # Conv with bias + foldable batch norm; grouped strided SAME conv without bias + foldable one.
    x = b.node("Conv", [x, b.weight("c1/w", 4, 3, 3, 3), b.weight("c1/b", 4)], "c1")
    x = b.node("Relu", [b.batch_norm(x, "bn1", 4)], "r1")
    x = b.node(
        "Conv",
        [x, b.weight("c2/w", 4, 2, 3, 3)],
        "c2",
        group=2,
        strides=[2, 2],
        auto_pad="SAME_UPPER",
    )
    r2 = b.node("Relu", [b.batch_norm(x, "bn2", 4)], "r2")  # [2, 4, 5, 5]
    b3 = b.batch_norm(r2, "bn3", 4)  # after a Relu: stays a batch norm
    pooled = b.node("MaxPool", [b3], "mp", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    uneven = b.node(
        "MaxPool", [r2], "mp_uneven", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1]
    )
    averaged = b.node(
        "AveragePool", [pooled], "ap", kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0
    )
    x = b.node("Add", [uneven, averaged], "add")  # [2, 4, 3, 3]
    half = b.node(
        "Constant", [], "half", value=numpy_helper.from_array(np.array(0.5, dtype=np.float32))
    )
    x = b.node("Mul", [x, half], "mul")
    x = b.node("Sub", [x, b.weight("shift", 1, 4, 1, 1)], "sub")
    two = b.node("Constant", [], "two", value=numpy_helper.from_array(np.array(2.0, np.float32)))
    x = b.node("Div", [x, two], "div")
    x = b.node("Identity", [x], "identity")
    # 3D-UNet's operators, here in 2D (the converter's handlers serve 1 to 3 spatial dimensions), on
    # a side branch added back: instance norm alone would erase what tells the inputs apart.
    scale, shift = b.weight("in/scale", 4), b.weight("in/shift", 4, scale=0.05)
    y = b.node("InstanceNormalization", [x, scale, shift], "inorm", epsilon=1e-5)
    up_w, up_b = b.weight("up/w", 4, 4, 2, 2, scale=0.05), b.weight("up/b", 4, scale=0.05)
    y = b.node("ConvTranspose", [y, up_w, up_b], "up", kernel_shape=[2, 2], strides=[2, 2])
    y = b.node("MaxPool", [y], "up_pool", kernel_shape=[2, 2], strides=[2, 2])  # [2, 4, 3, 3]
    x = b.node("Add", [x, y], "up_add")
    # RetinaNet's FPN upsampling (Resize nearest / asymmetric / floor, since opset 11), on a side
    # branch pooled back to its size and added.
    if opset >= RESIZE_SINCE:
        scales = b.const("resize/scales", np.array([1, 1, 2, 2], dtype=np.float32))
        roi = b.const("resize/roi", np.array([], dtype=np.float32))
        y = b.node(
            "Resize",
            [x, roi, scales],
            "resize",
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        )
        y = b.node("AveragePool", [y], "resize_pool", kernel_shape=[2, 2], strides=[2, 2])
        x = b.node("Add", [x, b.node("Mul", [y, half], "resize_half")], "resize_add")
    # PyTorch-style head.
    gap = b.node("GlobalAveragePool", [x], "gap")  # [2, 4, 1, 1]
    flat = b.node("Flatten", [gap], "flat", axis=1)
    logits1 = b.node(
        "Gemm",
        [flat, b.weight("fc/w", CLASSES, 4, scale=4.0), b.weight("fc/b", CLASSES, scale=0.02)],
        "l1",
        transB=1,
    )
    # TensorFlow-style head (the official model's).
    mean = b.axes_op("ReduceMean", x, "mean", [2, 3], since=18, keepdims=1)
    squeezed = b.axes_op("Squeeze", mean, "squeeze", [2, 3], since=13)
    logits2 = b.node("MatMul", [squeezed, b.weight("dense/w", 4, CLASSES, scale=4.0)], "matmul")
    logits2 = b.node("Add", [logits2, b.weight("dense/b", CLASSES, scale=0.02)], "l2")
    # Shape chain: reshape gap to [batch, -1] through Shape/Gather/Unsqueeze/Concat.
    shape = b.node("Shape", [x], "shape")
    batch = b.node("Gather", [shape, b.const("zero", np.array(0, dtype=np.int64))], "batch", axis=0)
    batch = b.axes_op("Unsqueeze", batch, "batch1", [0], since=13)
    minus_one = b.const("minus_one", np.array([-1], dtype=np.int64))
    target = b.node("Concat", [batch, minus_one], "target", axis=0)
    flat2 = b.node("Reshape", [gap, target], "flat2")
    logits3 = b.node(
        "Gemm",
        [flat2, b.weight("fc2/w", 4, CLASSES, scale=4.0), b.weight("fc2/c", CLASSES, scale=0.02)],
        "l3",
        alpha=0.5,
        beta=2.0,
    )
    picked = b.node(
        "Gather", [flat, b.const("pick", np.array([0, 2], dtype=np.int64))], "picked", axis=1
    )
    logits4 = b.node("MatMul", [picked, b.weight("pick/w", 2, CLASSES, scale=4.0)], "l4")
    logits = b.node("Add", [b.node("Add", [logits1, logits2], "l12"), logits3], "l123")
    logits = b.node("Add", [logits, logits4], "logits")
    logits = b.node("Reshape", [logits, b.const("keep", np.array([0, -1], np.int64))], "logits2d")
    b.node("Softmax", [logits], "prob", axis=1)
    b.node("ArgMax", [logits], "label", axis=1, keepdims=0)

    graph = helper.make_graph(
        b.nodes,
        f"converter_coverage_opset{opset}",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, list(INPUT_SHAPE))],
        [
            helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", CLASSES]),
            helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
        ],
        b.initializers,
    )
    opsets = [helper.make_opsetid("", opset)]
    ir_version = helper.find_min_ir_version_for(opsets)
    if ir_version < 4:  # IR 3 (opset 8, as the first official ResNet-50) lists weights as inputs
        graph.input.extend(
            helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            for init in b.initializers
        )
    model = helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)
    onnx.checker.check_model(model)
    return model


def random_input(batch: int, seed: int) -> npt.NDArray[np.float32]:
    """Inputs for a coverage graph that differ per sample in scale and per-channel offset, so that
    they fall in different classes (plain noise averages out to one class)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, *INPUT_SHAPE[1:]))
    x = x * rng.uniform(0.2, 3.0, (batch, 1, 1, 1)) + rng.normal(0.0, 2.0, (batch, 3, 1, 1))
    inputs: npt.NDArray[np.float32] = x.astype(np.float32)
    return inputs
