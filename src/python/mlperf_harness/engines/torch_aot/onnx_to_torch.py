"""ONNX -> torch: the part that needs no torch (op table, checks, graph rewrites) and the entry point.

The converter covers the operators that ResNet-50 graphs use (and the other benchmarks' graphs,
RetinaNet's FPN upsampling by Resize among them): our stand-in (stand_in_model.py) and the official
MLPerf resnet50_v1.onnx, which tf2onnx made from TensorFlow (opset 8 or 11: Pad before the strided
convolutions, BatchNormalization, ReduceMean + Squeeze + MatMul + Add for the head, Softmax, ArgMax,
Transpose where the layout changes). Anything else is refused up front, naming every
unsupported operator, before torch is even imported.

`to_torch_module` returns a `torch.nn.Module` whose forward interprets the node list; traced by
torch.export it becomes one flat graph of aten operators.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

from mlperf_harness.errors import HarnessError

DEFAULT_DOMAINS = ("", "ai.onnx")

# Every operator `torch_module.HANDLERS` implements (a test on a torch host checks they agree).
SUPPORTED_OPS = frozenset(
    {
        "Add",
        "ArgMax",
        "AveragePool",
        "BatchNormalization",
        "Cast",
        "Concat",
        "Constant",
        "Conv",
        "ConvTranspose",
        "Div",
        "Flatten",
        "Gather",
        "Gemm",
        "GlobalAveragePool",
        "Identity",
        "InstanceNormalization",
        "MatMul",
        "MaxPool",
        "Mul",
        "Pad",
        "ReduceMean",
        "Relu",
        "Reshape",
        "Resize",
        "Shape",
        "Softmax",
        "Squeeze",
        "Sub",
        "Transpose",
        "Unsqueeze",
    }
)
# Opsets whose operator forms the converter knows (attributes moved to inputs at 11, 13 and 18).
MIN_OPSET, MAX_OPSET = 7, 21


def op_name(node: onnx.NodeProto) -> str:
    """`Conv`, or `domain::Op` for operators outside the default domain."""
    return node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}::{node.op_type}"


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return int(entry.version)
    raise HarnessError("the ONNX model imports no default-domain opset")


def unsupported_ops(model: onnx.ModelProto) -> dict[str, int]:
    """Operators the converter does not implement, with how often each occurs."""
    counts = Counter(op_name(node) for node in model.graph.node)
    return {op: count for op, count in sorted(counts.items()) if op not in SUPPORTED_OPS}


def check_convertible(model: onnx.ModelProto) -> None:
    """Refuse, naming every reason at once, a model the torch converter cannot convert."""
    problems = []
    missing = unsupported_ops(model)
    if missing:
        listed = ", ".join(f"{op} (x{count})" for op, count in missing.items())
        problems.append(f"unsupported ONNX operators: {listed}")
    opset = default_opset(model)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        problems.append(f"opset {opset} (the converter knows {MIN_OPSET}..{MAX_OPSET})")
    for node in model.graph.node:
        extra_outputs = any(node.output[1:])
        if node.op_type in ("MaxPool", "BatchNormalization") and extra_outputs:
            problems.append(f"{node.op_type} {node.name!r} with extra outputs (training mode)")
    if problems:
        raise HarnessError(
            f"the torch backend cannot convert this model: {'; '.join(problems)}; "
            "use the onnxruntime backend, or extend engines/torch_aot"
        )


# ---------------------------------------------------------------------------------------------------
# Graph rewrites (numpy only)


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """A node's attributes as Python values (tensors as numpy arrays, strings as str)."""
    values: dict[str, Any] = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if isinstance(value, onnx.TensorProto):
            value = numpy_helper.to_array(value)
        elif isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [item.decode() for item in value]
        values[attribute.name] = value
    return values


def fold_batch_norms(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """Fold each inference-mode BatchNormalization into the Conv before it, where that is exact.

    A batch norm folds when its input comes from a Conv with constant weights (and bias), that Conv's
    output feeds nothing else and is no graph output, and the batch norm's parameters are constant.
    Returns the rewritten copy and how many were folded. tf2onnx keeps TensorFlow's batch norms as
    nodes; folded, each costs nothing at run time.
    """
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    graph = folded.graph
    initializers = {init.name: init for init in graph.initializer}
    consumers = Counter(name for node in graph.node for name in node.input if name)
    graph_outputs = {output.name for output in graph.output}
    # Nodes by index: protobuf may hand out a new wrapper object on each access (no stable id()).
    nodes = list(graph.node)
    producers = {output: index for index, node in enumerate(nodes) for output in node.output}
    removed: set[int] = set()
    count = 0
    weights_are_inputs = any(value.name in initializers for value in graph.input)

    def constant(name: str) -> npt.NDArray[Any] | None:
        init = initializers.get(name)
        return None if init is None else numpy_helper.to_array(init)

    for bn_index, bn in enumerate(nodes):
        if bn.op_type != "BatchNormalization" or bn.domain not in DEFAULT_DOMAINS:
            continue
        if len(bn.input) < 5 or any(bn.output[1:]):
            continue
        conv_index = producers.get(bn.input[0])
        if conv_index is None:
            continue
        conv = nodes[conv_index]
        if conv.op_type != "Conv" or conv.domain not in DEFAULT_DOMAINS:
            continue
        if consumers[conv.output[0]] != 1 or conv.output[0] in graph_outputs:
            continue
        params = [constant(name) for name in bn.input[1:5]]
        weight = constant(conv.input[1]) if len(conv.input) > 1 else None
        has_bias = len(conv.input) > 2 and bool(conv.input[2])
        bias = constant(conv.input[2]) if has_bias else None
        if weight is None or any(p is None for p in params) or (has_bias and bias is None):
            continue
        gamma, beta, mean, var = (np.asarray(p, dtype=np.float64) for p in params)
        epsilon = float(attributes(bn).get("epsilon", 1e-5))
        scale = gamma / np.sqrt(var + epsilon)
        new_weight = weight.astype(np.float64) * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
        old_bias = np.zeros_like(mean) if bias is None else bias.astype(np.float64)
        new_bias = (old_bias - mean) * scale + beta
        stem = f"{conv.name or conv.output[0]}/bn_folded"
        weight_name, bias_name = f"{stem}/weight", f"{stem}/bias"
        added = [
            numpy_helper.from_array(new_weight.astype(weight.dtype), weight_name),
            numpy_helper.from_array(new_bias.astype(weight.dtype), bias_name),
        ]
        graph.initializer.extend(added)
        if weights_are_inputs:  # IR 3 lists every initializer as a graph input too
            graph.input.extend(
                helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in added
            )
        data = conv.input[0]
        del conv.input[:]
        conv.input.extend([data, weight_name, bias_name])
        conv.output[0] = bn.output[0]
        removed.add(bn_index)
        count += 1

    if count:
        kept = [node for index, node in enumerate(nodes) if index not in removed]
        del graph.node[:]
        graph.node.extend(kept)
        _drop_unused_initializers(graph)
    return folded, count


def fold_pads(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """Fold each zero Pad over the spatial axes into the Convs that alone read it: their padding
    grows by the Pad's, and the Pad goes.

    tf2onnx writes TensorFlow's explicitly padded convolutions (ResNet v1.5's stem and strided
    convolutions: `fixed_padding`, then a VALID convolution) as a Pad node and a Conv. Unfolded,
    the Pad is a pass of its own over the whole tensor, and the FP8 engine's planner sees a
    convolution reading an fp16 tensor no fused kernel made; folded, the padding is the
    convolution's own (cuDNN's, or the FP8 kernels' masks and TMA fills), at no cost. The Pad
    folds when it is in constant mode with the value 0 (an attribute before opset 11, else a
    constant input; no `axes` input), pads neither batch nor channels, and every reader is a Conv
    taking it as its data input with explicit or VALID padding (auto_pad NOTSET or VALID), and it is
    no graph output. Returns the rewritten copy and how many Pads were folded.
    """
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    graph = folded.graph
    initializers = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    opset = default_opset(folded)
    graph_outputs = {output.name for output in graph.output}
    nodes = list(graph.node)
    readers: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        for name in node.input:
            readers.setdefault(name, []).append(index)
    removed: set[int] = set()
    for index, pad in enumerate(nodes):
        spatial = _zero_spatial_pads(pad, initializers, opset)
        if spatial is None or pad.output[0] in graph_outputs:
            continue
        convs = [nodes[i] for i in readers.get(pad.output[0], [])]
        if not convs or not all(_takes_padding(conv, pad.output[0]) for conv in convs):
            continue
        begins, ends = spatial
        for conv in convs:
            conv_attrs = attributes(conv)
            own = [int(p) for p in conv_attrs.get("pads", [0] * 2 * len(begins))]
            if conv_attrs.get("auto_pad", "NOTSET") == "VALID":
                own = [0] * 2 * len(begins)
            _set_pads(conv, [a + b for a, b in zip(own, [*begins, *ends], strict=True)])
            conv.input[0] = pad.input[0]
        removed.add(index)
    if removed:
        del graph.node[:]
        graph.node.extend(node for index, node in enumerate(nodes) if index not in removed)
        _drop_unused_initializers(graph)
    return folded, len(removed)


def explicit_pads(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """Give each Conv and MaxPool padded by `auto_pad` SAME_UPPER or SAME_LOWER the explicit pads
    that mean the same, where ONNX's shape inference knows its input's spatial size.

    tf2onnx writes TensorFlow's SAME padding so where it does not know the shapes. The FP8 planner
    fuses convolutions and pools with explicit padding only, and fold_pads adds to explicit
    padding only. Per spatial axis of size `n`, stride `s`, window `k` and dilation `d`: the output
    is ceil(n / s) long, the padding `max((ceil(n / s) - 1) s + (k - 1) d + 1 - n, 0)`, its odd
    element after (UPPER) or before (LOWER). Returns the rewritten copy and how many nodes changed.
    """
    explicit = onnx.ModelProto()
    explicit.CopyFrom(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(explicit)
    except Exception:  # a graph shape inference cannot follow: leave auto_pad to the converter
        return explicit, 0
    graph = inferred.graph
    shapes = {
        value.name: [dim.dim_value if dim.HasField("dim_value") else 0 for dim in dims]
        for value in [*graph.input, *graph.value_info, *graph.output]
        if (dims := value.type.tensor_type.shape.dim)
    }
    weights = {init.name: tuple(init.dims) for init in explicit.graph.initializer}
    changed = 0
    for node in explicit.graph.node:
        attrs = attributes(node)
        mode = attrs.get("auto_pad", "NOTSET")
        if node.op_type not in ("Conv", "MaxPool") or node.domain not in DEFAULT_DOMAINS:
            continue
        if mode not in ("SAME_UPPER", "SAME_LOWER"):
            continue
        sizes = shapes.get(node.input[0], [])[2:]
        if not sizes or not all(sizes):
            continue  # spatial size unknown
        kernel = [int(k) for k in attrs.get("kernel_shape", [])]
        if not kernel and node.op_type == "Conv" and len(node.input) > 1:
            kernel = list(weights.get(node.input[1], ())[2:])  # a Conv's weights give it
        if len(kernel) != len(sizes):
            continue
        strides = attrs.get("strides", [1] * len(sizes))
        dilations = attrs.get("dilations", [1] * len(sizes))
        begins, ends = [], []
        for n, k, stride, dilation in zip(sizes, kernel, strides, dilations, strict=True):
            out = -(-n // stride)
            total = max((out - 1) * stride + (k - 1) * dilation + 1 - n, 0)
            before = total // 2 if mode == "SAME_UPPER" else total - total // 2
            begins.append(before)
            ends.append(total - before)
        _set_pads(node, [*begins, *ends])
        changed += 1
    return explicit, changed


def _set_pads(node: onnx.NodeProto, pads: list[int]) -> None:
    """Give `node` these explicit pads, in place of its pads or auto_pad."""
    kept = [a for a in node.attribute if a.name not in ("pads", "auto_pad")]
    del node.attribute[:]
    node.attribute.extend([*kept, helper.make_attribute("pads", pads)])


def _zero_spatial_pads(
    pad: onnx.NodeProto, constants: dict[str, npt.NDArray[Any]], opset: int
) -> tuple[list[int], list[int]] | None:
    """A Pad's (begins, ends) over the spatial axes of an NC... tensor when it pads with zeros over
    those alone (fold_pads), else None."""
    if pad.op_type != "Pad" or pad.domain not in DEFAULT_DOMAINS:
        return None
    attrs = attributes(pad)
    if attrs.get("mode", "constant") != "constant":
        return None
    if opset < 11:
        pads, value = [int(p) for p in attrs.get("pads", [])], float(attrs.get("value", 0.0))
    else:
        if len(pad.input) < 2 or pad.input[1] not in constants or len(pad.input) > 3:
            return None  # pads computed at run time, or an axes input
        pads = [int(p) for p in constants[pad.input[1]].reshape(-1)]
        value_name = pad.input[2] if len(pad.input) > 2 else ""
        if value_name and value_name not in constants:
            return None
        value = float(constants[value_name].reshape(-1)[0]) if value_name else 0.0
    rank = len(pads) // 2
    if value != 0.0 or rank < 3 or len(pads) != 2 * rank or any(p < 0 for p in pads):
        return None
    begins, ends = pads[:rank], pads[rank:]
    if begins[0] or begins[1] or ends[0] or ends[1]:
        return None  # batch or channels padded
    return begins[2:], ends[2:]


def _takes_padding(node: onnx.NodeProto, tensor: str) -> bool:
    """Whether `node` is a Conv reading `tensor` as its data input only, with explicit or VALID
    padding (fold_pads can add to it)."""
    return (
        node.op_type == "Conv"
        and node.domain in DEFAULT_DOMAINS
        and node.input[0] == tensor
        and tensor not in node.input[1:]
        and attributes(node).get("auto_pad", "NOTSET") in ("NOTSET", "VALID")
    )


def _drop_unused_initializers(graph: onnx.GraphProto) -> None:
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    unused = {init.name for init in graph.initializer} - used
    kept = [init for init in graph.initializer if init.name not in unused]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    inputs = [value for value in graph.input if value.name not in unused]
    del graph.input[:]
    graph.input.extend(inputs)


# ---------------------------------------------------------------------------------------------------
# Loading and converting


def load_model(model_path: Path) -> onnx.ModelProto:
    """The ONNX model, checked for convertibility, and rewritten (`rewritten`)."""
    if not model_path.is_file():
        raise HarnessError(f"model not found: {model_path}")
    try:
        model = onnx.load(str(model_path))
    except Exception as error:  # onnx raises DecodeError and others for files that are not ONNX
        raise HarnessError(f"not an ONNX model: {model_path} ({type(error).__name__})") from error
    check_convertible(model)
    return rewritten(model)


def rewritten(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its batch norms folded into its convolutions, its SAME padding made explicit
    and its convolutions' zero Pads folded into them (fold_batch_norms, explicit_pads, fold_pads):
    what the engines build from."""
    return fold_pads(explicit_pads(fold_batch_norms(model)[0])[0])[0]


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph's real inputs (older exporters list initializers as inputs too)."""
    initializers = {init.name for init in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in initializers]


def input_shape(value: onnx.ValueInfoProto, batch_size: int) -> tuple[int, ...]:
    """The input's shape with its first (batch) dimension set; every other dimension must be fixed."""
    dims = value.type.tensor_type.shape.dim
    shape = [batch_size]
    for index, dim in enumerate(dims[1:], start=1):
        if not dim.HasField("dim_value") or dim.dim_value <= 0:
            raise HarnessError(
                f"input {value.name!r} dimension {index} is not fixed ({dim.dim_param or '?'}); "
                "the torch engine compiles static shapes"
            )
        shape.append(int(dim.dim_value))
    return tuple(shape)


def to_torch_module(model: onnx.ModelProto, output_names: Sequence[str] | None = None) -> Any:
    """A `torch.nn.Module` computing `output_names` (default: every graph output) in fp32.

    Imports torch (and raises HarnessError where it is absent).
    """
    check_convertible(model)
    try:
        from mlperf_harness.engines.torch_aot import torch_module
    except ImportError as error:
        raise HarnessError(
            f"the torch backend needs PyTorch, which this Python cannot import ({error})"
        ) from error
    return torch_module.OnnxGraphModule(model, output_names)
