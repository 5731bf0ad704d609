"""conv_epilogue.fuse_conv_epilogues: which convolutions become one node with their ReLU (and the
residual Add before it), and that the rewritten graph still computes in order. The fused nodes'
arithmetic on torch: test_conv_epilogue_with_torch.py."""

from __future__ import annotations

from collections.abc import Sequence

import onnx
from conv_epilogue_graphs import conv, residual_model
from onnx import TensorProto, helper

from mlperf_harness.engines.torch_aot.conv_epilogue import (
    CONV_ADD_RELU,
    CONV_RELU,
    DOMAIN,
    fuse_conv_epilogues,
)


def _in_order(nodes: Sequence[onnx.NodeProto], given: set[str]) -> bool:
    known = set(given)
    for node in nodes:
        if any(name and name not in known for name in node.input):
            return False
        known.update(node.output)
    return True


def test_convolutions_before_a_relu_or_a_residual_add_and_relu_become_one_node() -> None:
    model = residual_model()
    fused, count = fuse_conv_epilogues(model)

    kinds = {node.name: node.op_type for node in fused.graph.node if node.domain == DOMAIN}
    assert kinds == {"a": CONV_RELU, "b2": CONV_ADD_RELU, "c": CONV_ADD_RELU}
    assert count == 3
    by_name = {node.name: node for node in fused.graph.node if node.domain == DOMAIN}
    assert list(by_name["b2"].input) == ["ar", "b2_w", "b2_b", "s"]  # the shortcut is the residual
    assert list(by_name["c"].input) == ["br", "c_w", "c_b", "br"]
    assert list(by_name["c"].output) == ["cr"]
    assert [a.name for a in by_name["a"].attribute] == ["pads"]
    # d (read twice), e (asymmetric padding) and f (a graph output) stay as they were
    plain = [node.name for node in fused.graph.node if node.op_type == "Conv"]
    assert plain == ["s", "d", "e", "f"]
    assert _in_order(fused.graph.node, {"x"} | {i.name for i in fused.graph.initializer})
    assert DOMAIN in {entry.domain for entry in fused.opset_import}
    assert len(model.graph.node) == 16  # the model given is not changed


def test_a_graph_with_nothing_to_fuse_comes_back_as_it_was() -> None:
    node, weights = conv("a", "x", (4, 4))
    graph = helper.make_graph(
        [node],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fused, count = fuse_conv_epilogues(model)
    assert count == 0
    assert fused == model
