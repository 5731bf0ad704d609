"""The FP8 planner on ResNet-50 as tf2onnx writes TensorFlow's model (the official
resnet50_v1.onnx's form, not at hand here): each strided convolution after an explicit Pad with
VALID padding (TensorFlow's fixed_padding), the stem's max pool padded after its last row and
column only (SAME). Once onnx_to_torch.rewritten folds the Pads, the plan fuses what it fuses on the
stand-in's PyTorch-shaped graph: every bottleneck convolution in FP8 reading e4m3, the stem and its
pool as one node; and ONNX Runtime computes the same features before and after the rewrite."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.benchmarks.resnet50.stand_in_model import INPUT_NAME, BnStatistics
from mlperf_harness.engines.torch_aot.onnx_to_torch import attributes, rewritten
from mlperf_harness.engines.torch_fp8 import plan


def _body() -> onnx.ModelProto:
    """The stand-in's body (stem, four stages, pooled features), random weights, batch norms as
    identities: PyTorch's shape of ResNet-50."""
    weights = stand_in_model.random_conv_weights(0)
    statistics = {
        name: BnStatistics(np.zeros(w.shape[0]), np.ones(w.shape[0])) for name, w in weights.items()
    }
    return stand_in_model.features_graph(weights, statistics)


def _tensorflow_shaped(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` as tf2onnx writes TensorFlow's: a zero Pad (its pads an input, opset 11 on) before
    each strided convolution wider than 1x1, which pads nothing itself; the max pool padded
    after only."""
    shaped = onnx.ModelProto()
    shaped.CopyFrom(model)
    nodes = []
    for node in shaped.graph.node:
        attrs = attributes(node)
        if node.op_type == "Conv" and attrs["strides"] == [2, 2] and attrs["kernel_shape"][0] > 1:
            pad = attrs["kernel_shape"][0] // 2
            pads_name = f"{node.name}/fixed_padding"
            shaped.graph.initializer.append(
                numpy_helper.from_array(np.array([0, 0, pad, pad] * 2, np.int64), pads_name)
            )
            padded = f"{node.name}/padded"
            nodes.append(helper.make_node("Pad", [node.input[0], pads_name], [padded]))
            node.input[0] = padded
            _set(node, "pads", [0, 0, 0, 0])
        if node.op_type == "MaxPool":
            _set(node, "pads", [0, 0, 1, 1])
        nodes.append(node)
    del shaped.graph.node[:]
    shaped.graph.node.extend(nodes)
    onnx.checker.check_model(shaped)
    return shaped


def _set(node: onnx.NodeProto, name: str, value: list[int]) -> None:
    kept = [attribute for attribute in node.attribute if attribute.name != name]
    del node.attribute[:]
    node.attribute.extend([*kept, helper.make_attribute(name, value)])


def _features(model: onnx.ModelProto, x: npt.NDArray[np.float32]) -> npt.NDArray[Any]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {INPUT_NAME: x})[0])


def _planned(model: onnx.ModelProto) -> plan.Fp8Plan:
    amax = {name: 2.0 + index for index, name in enumerate(plan.calibrated_tensors(model))}
    return plan.plan_fp8(model, amax)


def test_tensorflow_s_resnet_50_plans_as_pytorch_s_once_rewritten() -> None:
    body = _body()
    shaped = _tensorflow_shaped(body)
    ops = [node.op_type for node in shaped.graph.node]
    assert ops.count("Pad") == 4  # the stem and the three strided 3x3 convolutions
    ready = rewritten(shaped)
    assert "Pad" not in [node.op_type for node in ready.graph.node]
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    np.testing.assert_allclose(_features(ready, x), _features(shaped, x), rtol=1e-4, atol=1e-4)

    ours, theirs = _planned(rewritten(body)), _planned(ready)
    assert len(theirs.layers) == len(ours.layers) == 52
    assert not any(layer.input_fp16 for layer in theirs.layers)  # every input e4m3, made fused
    (stem,) = theirs.stems
    assert stem.pool_pads == (0, 0, 1, 1) and stem.pads == (3, 3, 3, 3)
    assert ours.stems[0].pool_pads == (1, 1, 1, 1)
    left = {node.op_type for node in theirs.model.graph.node}
    assert left == {node.op_type for node in ours.model.graph.node}
    assert not left & {"Pad", "Conv", "MaxPool", "Relu", "Add"}
