"""What RetinaNet's CPU int8 engine quantizes: every convolution (nearly all the work; the FPN's
resizes and adds and the heads' reshapes stay fp32 between them) except the class logits'.

The class-logit convolutions stay fp32 because their outputs are what the postprocessing thresholds
(score > 0.05) and ranks (the best 1,000 a level, then NMS): a uint8 logit moves candidates across
the threshold and reorders ties, where the box deltas' rounding only moves a box by a fraction of a
pixel. Measured on the stand-in (docs/retinanet.md): every convolution in int8 kept 97.1% of fp32's
mAP, all but the class logits 99.1%, at little cost in speed (they are about 6% of the work). The
margin is thin: another draw of calibration pictures moves either by several percent, while the
error of the scores falls with every draw.

The class logits are found in the graph, not by name: the convolutions whose outputs reach the
model's output through no other convolution (the two heads' last), less the box regression's
(ANCHORS_PER_POSITION x 4 outputs).
"""

from __future__ import annotations

from pathlib import Path

import onnx

from mlperf_harness.benchmarks.retinanet.anchors import ANCHORS_PER_POSITION
from mlperf_harness.errors import HarnessError

INT8_OPERATORS = ("Conv",)
BOX_CHANNELS = ANCHORS_PER_POSITION * 4


def output_convolutions(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The Conv nodes whose outputs reach a graph output through no other Conv, in graph order."""
    producer = {output: node for node in graph.node for output in node.output}
    found: set[str] = set()
    seen: set[str] = set()
    pending = [value.name for value in graph.output]
    while pending:
        tensor = pending.pop()
        node = producer.get(tensor)
        if node is None or tensor in seen:
            continue
        seen.add(tensor)
        if node.op_type == "Conv":
            found.add(node.output[0])
        else:
            pending.extend(node.input)
    return [node for node in graph.node if node.op_type == "Conv" and node.output[0] in found]


def class_logit_convolutions(model_path: Path) -> tuple[str, ...]:
    """The names of the convolutions whose outputs are the class logits (one a pyramid level)."""
    graph = onnx.load(str(model_path), load_external_data=False).graph
    channels = {weight.name: weight.dims[0] for weight in graph.initializer if weight.dims}
    logits = []
    for node in output_convolutions(graph):
        if node.input[1] not in channels:
            raise HarnessError(
                f"{model_path}: the head convolution {node.name or node.output[0]!r} has no "
                "constant weight; cannot tell class logits from box regression for int8"
            )
        if channels[node.input[1]] != BOX_CHANNELS:
            if not node.name:
                raise HarnessError(
                    f"{model_path}: the class-logit convolution of {node.output[0]!r} has no "
                    "name, so int8 cannot leave it in fp32"
                )
            logits.append(node.name)
    if not logits:
        raise HarnessError(
            f"{model_path}: no class-logit convolution found before the output (int8 keeps them "
            "in fp32)"
        )
    return tuple(logits)
