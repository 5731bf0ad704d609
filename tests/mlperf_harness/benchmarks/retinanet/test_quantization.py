"""Which convolutions RetinaNet's int8 engine leaves in fp32: the class logits', found in the graph
(the stand-in's topology, and small hand-made graphs for what the rule must tell apart)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.benchmarks.retinanet import stand_in
from mlperf_harness.benchmarks.retinanet.quantization import (
    BOX_CHANNELS,
    class_logit_convolutions,
)
from mlperf_harness.benchmarks.retinanet.stand_in_model import random_weights, retinanet_model
from mlperf_harness.errors import HarnessError


def test_the_stand_ins_class_logits_are_its_five_cls_logits_convolutions(tmp_path: Path) -> None:
    model = retinanet_model(random_weights(stand_in.WIDTH, 0), stand_in.WIDTH, "test", {})
    path = tmp_path / "retinanet.onnx"
    path.write_bytes(model.SerializeToString())
    assert class_logit_convolutions(path) == tuple(f"cls_logits_p{level}" for level in range(3, 8))


def _conv(name: str, source: str, channels: int, weights: list[TensorProto]) -> onnx.NodeProto:
    kernel = np.zeros((channels, 4, 1, 1), np.float32)
    weights.append(numpy_helper.from_array(kernel, f"{name}.weight"))
    return helper.make_node("Conv", [source, f"{name}.weight"], [name], name=name)


def _save(
    tmp_path: Path, nodes: list[onnx.NodeProto], weights: list[TensorProto], output: str
) -> Path:
    graph = helper.make_graph(
        nodes,
        "heads",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        weights,
    )
    path = tmp_path / "heads.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    return path


def test_only_the_last_convolution_before_the_output_and_not_the_boxes(tmp_path: Path) -> None:
    weights: list[TensorProto] = []
    nodes = [
        _conv("tower", "x", 4, weights),  # feeds the logits: not itself an output convolution
        _conv("logits", "tower", 72, weights),
        _conv("boxes", "x", BOX_CHANNELS, weights),
        helper.make_node("Concat", ["boxes", "logits"], ["out"], axis=1),
    ]
    assert class_logit_convolutions(_save(tmp_path, nodes, weights, "out")) == ("logits",)


def test_a_model_with_no_class_logits_is_one_line(tmp_path: Path) -> None:
    weights: list[TensorProto] = []
    nodes = [_conv("boxes", "x", BOX_CHANNELS, weights)]
    with pytest.raises(HarnessError, match="no class-logit convolution found"):
        class_logit_convolutions(_save(tmp_path, nodes, weights, "boxes"))
