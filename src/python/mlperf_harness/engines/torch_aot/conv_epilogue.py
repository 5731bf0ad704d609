"""Convolutions with their bias, residual Add and ReLU in cuDNN's epilogue: the ONNX rewrite (numpy
only) that marks them for torch (conv_epilogue_op.py runs them; the FP8 engine's fp16
convolutions, torch_fp8/module.py).

cuDNN applies the bias, the Add and the ReLU as it stores the output, as TensorRT fuses them; run
one after another each is a pass of its own over the output. On an H200 (torch 2.11, fp16, batch
8) RetinaNet's 93 such convolutions took 5.13 ms fused against 6.71 with Inductor's one pass after
each, each timed alone (engines/conv_epilogue_ab.py, docs/retinanet.md).

`fuse_conv_epilogues` replaces each 2-D Conv with a bias whose output only a Relu reads by one
CONV_RELU node (inputs x, w, b), and each whose output only an Add reads, whose output only a Relu
reads, by one CONV_ADD_RELU node (inputs x, w, b, z: the Add's other input), both in DOMAIN with the
Conv's attributes; conv_epilogue_op.py runs them on torch. Where both of an Add's inputs are such
convolutions (a residual block's downsampling shortcut) the first is fused and the second is z.
"""

from __future__ import annotations

from collections import defaultdict

import onnx
from onnx import helper

from mlperf_harness.engines.torch_aot.onnx_to_torch import DEFAULT_DOMAINS, attributes

DOMAIN = "mlperf_harness.conv"
CONV_RELU, CONV_ADD_RELU = "ConvRelu", "ConvAddRelu"
OPS = (
    f"{DOMAIN}::{CONV_RELU}",
    f"{DOMAIN}::{CONV_ADD_RELU}",
)  # as onnx_to_torch.op_name names them


def _fusable(node: onnx.NodeProto, constants: set[str]) -> bool:
    """A 2-D Conv with constant weights and bias and the same padding before and after."""
    if node.op_type != "Conv" or node.domain not in DEFAULT_DOMAINS or len(node.input) != 3:
        return False
    attrs = attributes(node)
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
    return (
        node.input[1] in constants
        and node.input[2] in constants
        and attrs.get("auto_pad", "NOTSET") in ("NOTSET", "VALID")
        and len(pads) == 4
        and pads[:2] == pads[2:]
    )


def fuse_conv_epilogues(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """The rewritten copy (with DOMAIN imported) and how many convolutions it fused. Every fused
    node takes the place of the Relu it ends in, after everything it reads."""
    fused = onnx.ModelProto()
    fused.CopyFrom(model)
    graph = fused.graph
    nodes = list(graph.node)
    constants = {init.name for init in graph.initializer}
    outputs = {output.name for output in graph.output}
    readers: dict[str, list[int]] = defaultdict(list)
    for index, node in enumerate(nodes):
        for name in node.input:
            readers[name].append(index)

    def only_reader(name: str, op_type: str) -> int | None:
        found = readers.get(name, [])
        if len(found) != 1 or name in outputs or nodes[found[0]].op_type != op_type:
            return None
        return found[0] if nodes[found[0]].domain in DEFAULT_DOMAINS else None

    replaced: dict[int, onnx.NodeProto] = {}  # the Relu's index -> the fused node
    removed: set[int] = set()
    for index, node in enumerate(nodes):
        if index in removed or not _fusable(node, constants):
            continue
        inputs = list(node.input)
        relu = only_reader(node.output[0], "Relu")
        kind = CONV_RELU
        chain = [index]
        if relu is None:
            add = only_reader(node.output[0], "Add")
            if add is None or add in removed:
                continue
            others = [name for name in nodes[add].input if name != node.output[0]]
            relu = only_reader(nodes[add].output[0], "Relu")
            if relu is None or len(others) != 1:
                continue  # x + x, or no Relu after
            kind, inputs, chain = CONV_ADD_RELU, [*inputs, others[0]], [index, add]
        conv_attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        replaced[relu] = helper.make_node(
            kind,
            inputs,
            list(nodes[relu].output),
            name=node.name or node.output[0],
            domain=DOMAIN,
            **conv_attrs,
        )
        removed.update(chain)
    del graph.node[:]
    for index, node in enumerate(nodes):
        if index not in removed:
            graph.node.append(replaced.get(index, node))
    if replaced and not any(entry.domain == DOMAIN for entry in fused.opset_import):
        fused.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return fused, len(replaced)
