"""The FP8 plan's rounding as ONNX fake quantization, run by ONNX Runtime in fp32: an account of the
FP8 engine's accuracy apart from its own code (fp8_accuracy.py's `ort_*` variants), and one that
can round the weights and the activations separately.

Each convolution the plan runs in FP8 gets its weights rounded to e4m3 per output channel
(scales.py, as the engine's are), and, with `activations`, each tensor it reads in e4m3 (its input,
and with `residuals` the residual its Add reads in e4m3) divided by its scale, saturated, cast to
float8e4m3fn and back, and multiplied again (Cast to FLOAT8E4M3FN is ONNX opset 19: the model's
opset is raised to it, which changes none of the stand-in's operators). What it leaves out of the
engine's arithmetic: fp16 everywhere else, and the fp16 rounding of an output before its e4m3 one.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.engines.torch_fp8 import plan, scales

OPSET = 19  # the first with float8 types in Cast
LIMITS = ("fake_quant/min", "fake_quant/max")


def fake_quant_model(
    model: onnx.ModelProto,
    amax: dict[str, float],
    fp16_convs: Collection[str] = (),
    *,
    weights: bool = True,
    activations: bool = True,
    residuals: bool = True,
) -> onnx.ModelProto:
    """`model` with the rounding of the FP8 plan (plan.plan_fp8 of `model`, `amax`, `fp16_convs`)
    made explicit: weights and/or activations, the e4m3 residuals with `residuals`."""
    planned = plan.plan_fp8(model, amax, fp16_convs)
    fp8_convs = {layer.name for layer in planned.layers}
    rounded = {layer.input for layer in planned.layers}
    if residuals:
        rounded |= {str(layer.residual) for layer in planned.layers if layer.residual_scale}
    result = onnx.ModelProto()
    result.CopyFrom(model)
    graph = result.graph
    initializers = {init.name: init for init in graph.initializer}
    quantized: dict[str, list[onnx.NodeProto]] = {}  # tensor -> the nodes that round it
    for node in graph.node:
        conv = node.op_type == "Conv" and node.output[0] in fp8_convs
        if conv and weights:
            node.input[1] = _rounded_weights(graph, initializers, node.input[1])
        if not activations or not (conv or (node.op_type == "Add" and residuals)):
            continue
        for index, tensor in enumerate(node.input):
            if tensor in rounded and ((conv and index == 0) or node.op_type == "Add"):
                if tensor not in quantized:
                    quantized[tensor] = _round_nodes(graph, tensor, float(amax[tensor]))
                node.input[index] = f"{tensor}/e4m3"
    graph.initializer.extend(
        numpy_helper.from_array(np.array(value, np.float32), name)
        for name, value in zip(LIMITS, (-scales.E4M3_MAX, scales.E4M3_MAX), strict=True)
    )
    ordered: list[onnx.NodeProto] = []
    for name in [value.name for value in graph.input]:
        ordered += quantized.pop(name, [])
    for node in graph.node:  # each rounding right after the node that makes its tensor
        ordered.append(node)
        for name in node.output:
            ordered += quantized.pop(name, [])
    del graph.node[:]
    graph.node.extend(ordered)
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]  # not the unrounded weights
    del graph.initializer[:]
    graph.initializer.extend(kept)
    for entry in result.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = max(entry.version, OPSET)
    return result


def _rounded_weights(
    graph: onnx.GraphProto, initializers: dict[str, onnx.TensorProto], name: str
) -> str:
    """The name of `name`'s weights rounded to e4m3 per output channel (added once)."""
    rounded = f"{name}/e4m3"
    if rounded not in initializers:
        array = numpy_helper.to_array(initializers[name]).astype(np.float32)
        per_channel = scales.weight_scales(array).reshape(-1, 1, 1, 1)
        values = scales.round_to_e4m3(array / per_channel) * per_channel
        initializers[rounded] = numpy_helper.from_array(values.astype(np.float32), rounded)
        graph.initializer.append(initializers[rounded])
    return rounded


def _round_nodes(graph: onnx.GraphProto, tensor: str, amax: float) -> list[onnx.NodeProto]:
    """The nodes that write `tensor`/e4m3: the tensor as its e4m3 form holds it."""
    scale = f"{tensor}/e4m3_scale"
    graph.initializer.append(
        numpy_helper.from_array(np.array(scales.scale_for(amax), np.float32), scale)
    )
    steps = [f"{tensor}/e4m3_{step}" for step in ("divided", "saturated", "bits", "values")]
    return [
        helper.make_node("Div", [tensor, scale], [steps[0]]),
        helper.make_node("Clip", [steps[0], *LIMITS], [steps[1]]),
        helper.make_node("Cast", [steps[1]], [steps[2]], to=TensorProto.FLOAT8E4M3FN),
        helper.make_node("Cast", [steps[2]], [steps[3]], to=TensorProto.FLOAT),
        helper.make_node("Mul", [steps[3], scale], [f"{tensor}/e4m3"]),
    ]
