"""ONNX operators as torch functions, and the module that runs an ONNX graph with them.

Imports torch: only `onnx_to_torch.to_torch_module` and the engine builder import this module.

Values flowing through the graph are torch tensors, or numpy arrays where they are known when the
module is built or traced (integer initializers, shapes, Constant nodes of integers): operators that
need static integers (Reshape's shape, Pad's pads, axes) read them from those. Float constants are
registered as buffers, so `module.to(dtype)` converts them with the weights. Under torch.export the
interpreter loop runs once and leaves one flat graph of aten operators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
import torch.nn.functional as F  # type: ignore[import-not-found]  # pants: no-infer-dep
from onnx import helper, numpy_helper

from mlperf_harness.engines.torch_aot.onnx_to_torch import (
    SUPPORTED_OPS,
    attributes,
    default_opset,
    graph_inputs,
    op_name,
)
from mlperf_harness.errors import HarnessError

Value = Any  # torch.Tensor, a numpy array (static), or None (an omitted optional input)
Handler = Callable[["Context", list[Value], dict[str, Any]], list[Value]]

_TORCH_DTYPES: dict[int, Any] = {
    onnx.TensorProto.FLOAT: torch.float32,
    onnx.TensorProto.FLOAT16: torch.float16,
    onnx.TensorProto.BFLOAT16: torch.bfloat16,
    onnx.TensorProto.DOUBLE: torch.float64,
    onnx.TensorProto.INT64: torch.int64,
    onnx.TensorProto.INT32: torch.int32,
    onnx.TensorProto.INT8: torch.int8,
    onnx.TensorProto.UINT8: torch.uint8,
    onnx.TensorProto.BOOL: torch.bool,
}


@dataclass
class Context:
    opset: int
    device: Any  # the device of the graph's first input
    float_dtype: Any  # the dtype of the float weights (static float constants follow it)
    node: str = ""


def _static(value: Value) -> bool:
    return isinstance(value, np.ndarray)


def _tensor(ctx: Context, value: Value, like: Value = None) -> Any:
    """A tensor for `value`; a static float becomes the dtype of `like` (or of the weights)."""
    if not _static(value):
        return value
    tensor = torch.as_tensor(np.ascontiguousarray(value), device=ctx.device)
    if tensor.is_floating_point():
        follows = like is not None and not _static(like) and like.is_floating_point()
        tensor = tensor.to(like.dtype if follows else ctx.float_dtype)
    return tensor


def _ints(ctx: Context, value: Value, what: str) -> list[int]:
    if value is None:
        return []
    if not _static(value):
        raise HarnessError(
            f"{ctx.node}: {what} is computed from data; the torch converter needs it constant"
        )
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _axes_input_or_attr(
    ctx: Context, inputs: list[Value], attrs: dict[str, Any], since: int
) -> list[int] | None:
    """Axes from the attribute (opset < since) or the second input (opset >= since); None: absent."""
    if ctx.opset < since:
        return [int(a) for a in attrs["axes"]] if "axes" in attrs else None
    if len(inputs) > 1 and inputs[1] is not None:
        return _ints(ctx, inputs[1], "axes")
    return None


# ---------------------------------------------------------------------------------------------------
# Padding


def _spatial_pads(
    attrs: dict[str, Any],
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[list[int], list[int]]:
    """(begin, end) pads per spatial dimension, from `pads` or `auto_pad`."""
    n = len(kernel)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
            out = -(-int(size) // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - int(size), 0)
            small = total // 2
            begin = small if auto_pad == "SAME_UPPER" else total - small
            begins.append(begin)
            ends.append(total - begin)
        return begins, ends
    if auto_pad == "VALID":
        return [0] * n, [0] * n
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * n))]
    return pads[:n], pads[n:]


def _torch_pad(begins: Sequence[int], ends: Sequence[int]) -> list[int]:
    """ONNX (begins..., ends...) for the last len(begins) dims -> F.pad's (last_b, last_e, ...)."""
    result: list[int] = []
    for begin, end in zip(reversed(begins), reversed(ends), strict=True):
        result += [begin, end]
    return result


# ---------------------------------------------------------------------------------------------------
# Operators


def _conv(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    weight = _tensor(ctx, inputs[1], x)
    bias = _tensor(ctx, inputs[2], x) if len(inputs) > 2 and inputs[2] is not None else None
    n = weight.dim() - 2
    kernel = [int(k) for k in attrs.get("kernel_shape", list(weight.shape[2:]))]
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    begins, ends = _spatial_pads(attrs, list(x.shape[2:]), kernel, strides, dilations)
    if begins == ends:
        padding: list[int] = begins
    else:
        x = F.pad(x, _torch_pad(begins, ends))
        padding = [0] * n
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}.get(n)
    if conv is None:
        raise HarnessError(f"{ctx.node}: Conv over {n} spatial dimensions is not supported")
    return [conv(x, weight, bias, strides, padding, dilations, int(attrs.get("group", 1)))]


def _conv_transpose(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    """ONNX ConvTranspose (3D-UNet's upsampling) with symmetric pads and no output_shape."""
    x = inputs[0]
    weight = _tensor(ctx, inputs[1], x)
    bias = _tensor(ctx, inputs[2], x) if len(inputs) > 2 and inputs[2] is not None else None
    n = weight.dim() - 2
    if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise HarnessError(f"{ctx.node}: ConvTranspose with output_shape or auto_pad")
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * n))]
    if pads[:n] != pads[n:]:
        raise HarnessError(f"{ctx.node}: ConvTranspose with asymmetric pads {pads}")
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}.get(n)
    if conv is None:
        raise HarnessError(f"{ctx.node}: ConvTranspose over {n} spatial dimensions")
    return [
        conv(
            x,
            weight,
            bias,
            [int(v) for v in attrs.get("strides", [1] * n)],
            pads[:n],
            [int(v) for v in attrs.get("output_padding", [0] * n)],
            int(attrs.get("group", 1)),
            [int(v) for v in attrs.get("dilations", [1] * n)],
        )
    ]


def _instance_norm(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    scale, shift = _tensor(ctx, inputs[1], x), _tensor(ctx, inputs[2], x)
    return [F.instance_norm(x, weight=scale, bias=shift, eps=float(attrs.get("epsilon", 1e-5)))]


def _pool_geometry(
    x: Any, attrs: dict[str, Any]
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    kernel = [int(k) for k in attrs["kernel_shape"]]
    n = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    begins, ends = _spatial_pads(attrs, list(x.shape[2:]), kernel, strides, dilations)
    return kernel, strides, dilations, begins, ends


def _max_pool(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    kernel, strides, dilations, begins, ends = _pool_geometry(x, attrs)
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    symmetric = begins == ends and all(2 * b <= k for b, k in zip(begins, kernel, strict=True))
    if symmetric:
        padding = begins
    else:
        x = F.pad(x, _torch_pad(begins, ends), value=-math.inf)
        padding = [0] * len(kernel)
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[len(kernel)]
    return [pool(x, kernel, strides, padding, dilations, ceil_mode=ceil_mode)]


def _average_pool(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    kernel, strides, dilations, begins, ends = _pool_geometry(x, attrs)
    if any(d != 1 for d in dilations):
        raise HarnessError(f"{ctx.node}: AveragePool with dilations is not supported")
    include = bool(attrs.get("count_include_pad", 0))
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    symmetric = begins == ends and all(2 * b <= k for b, k in zip(begins, kernel, strict=True))
    if symmetric:
        padding = begins
    elif include:
        x = F.pad(x, _torch_pad(begins, ends))
        padding = [0] * len(kernel)
    else:
        raise HarnessError(
            f"{ctx.node}: AveragePool with uneven pads that exclude padding is not supported"
        )
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[len(kernel)]
    return [pool(x, kernel, strides, padding, ceil_mode=ceil_mode, count_include_pad=include)]


def _resize(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    """Nearest-neighbour upsampling by whole factors over the spatial axes (an FPN's top-down
    path): ONNX's nearest / asymmetric / floor picks input pixel floor(o / scale), which is what
    torch's nearest interpolation to the scaled size picks. Any other form is refused."""
    x = inputs[0]
    form = (
        attrs.get("mode", "nearest"),
        attrs.get("coordinate_transformation_mode", "half_pixel"),
        attrs.get("nearest_mode", "round_prefer_floor"),
    )
    if form != ("nearest", "asymmetric", "floor"):
        raise HarnessError(
            f"{ctx.node}: Resize {'/'.join(map(str, form))} is not supported "
            "(only nearest / asymmetric / floor)"
        )
    rank = len(x.shape)
    scales = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    sizes = inputs[3] if len(inputs) > 3 and inputs[3] is not None else None
    if sizes is not None and np.asarray(sizes).size:
        size = [int(d) for d in _ints(ctx, sizes, "Resize's sizes")]
    elif scales is not None and _static(scales) and scales.size == rank:
        size = [math.floor(int(d) * float(f)) for d, f in zip(x.shape, scales, strict=True)]
    else:
        raise HarnessError(f"{ctx.node}: Resize needs constant scales or sizes")
    whole = all(out % int(d) == 0 for out, d in zip(size, x.shape, strict=True))
    if size[:2] != [int(d) for d in x.shape[:2]] or not whole:
        raise HarnessError(
            f"{ctx.node}: Resize of {list(x.shape)} to {size} is not supported "
            "(whole factors over the spatial axes only)"
        )
    return [F.interpolate(x, size=size[2:], mode="nearest")]


def _global_average_pool(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    return [x.mean(dim=tuple(range(2, x.dim())), keepdim=True)]


def _batch_norm(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    scale, bias, mean, var = (_tensor(ctx, v, x) for v in inputs[1:5])
    epsilon = float(attrs.get("epsilon", 1e-5))
    return [F.batch_norm(x, mean, var, scale, bias, False, 0.0, epsilon)]


def _relu(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    return [F.relu(inputs[0])]


def _reduce_mean(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    keepdims = bool(attrs.get("keepdims", 1))
    axes = _axes_input_or_attr(ctx, inputs, attrs, since=18)
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(x.dim()))
    return [x.mean(dim=tuple(_axis(a, x.dim()) for a in axes), keepdim=keepdims)]


def _binary(numpy_op: Callable[[Any, Any], Any], torch_op: Callable[[Any, Any], Any]) -> Handler:
    def handler(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
        a, b = inputs[0], inputs[1]
        if _static(a) and _static(b):
            return [np.asarray(numpy_op(a, b)).astype(np.result_type(a, b))]
        return [torch_op(_tensor(ctx, a, b), _tensor(ctx, b, a))]

    return handler


def _numpy_div(a: Any, b: Any) -> Any:
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.trunc(np.true_divide(a, b))  # ONNX integer division truncates
    return np.true_divide(a, b)


def _torch_div(a: Any, b: Any) -> Any:
    if a.is_floating_point() or b.is_floating_point():
        return a / b
    return torch.div(a, b, rounding_mode="trunc")


def _flatten(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    rank = len(x.shape)
    axis = _axis(int(attrs.get("axis", 1)), rank)
    outer = math.prod(int(d) for d in x.shape[:axis])
    inner = math.prod(int(d) for d in x.shape[axis:])
    return [x.reshape(outer, inner)]


def _reshape(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    if ctx.opset < 5:
        raise HarnessError(f"{ctx.node}: Reshape-1 (shape as an attribute) is not supported")
    shape = _ints(ctx, inputs[1], "Reshape's shape")
    if not attrs.get("allowzero", 0):
        shape = [int(x.shape[i]) if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _squeeze(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    rank = len(x.shape)
    axes = _axes_input_or_attr(ctx, inputs, attrs, since=13)
    dims = [int(d) for d in x.shape]
    drop = {i for i, d in enumerate(dims) if d == 1} if not axes else {_axis(a, rank) for a in axes}
    shape = [d for i, d in enumerate(dims) if i not in drop]
    return [x.reshape(shape)]


def _unsqueeze(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    axes = _axes_input_or_attr(ctx, inputs, attrs, since=13) or []
    rank = len(x.shape) + len(axes)
    inserted = sorted(_axis(a, rank) for a in axes)
    shape = [int(d) for d in x.shape]
    for axis in inserted:
        shape.insert(axis, 1)
    return [x.reshape(shape)]


def _gemm(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    a = _tensor(ctx, inputs[0])
    b = _tensor(ctx, inputs[1], a)
    c = _tensor(ctx, inputs[2], a) if len(inputs) > 2 and inputs[2] is not None else None
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    trans_a, trans_b = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    if trans_a:
        a = a.t()
    if trans_b and alpha == 1.0 and beta == 1.0 and (c is None or c.dim() <= 1):
        return [F.linear(a, b, c)]
    y = a @ (b.t() if trans_b else b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c if beta == 1.0 else c * beta)
    return [y]


def _matmul(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    a = _tensor(ctx, inputs[0], inputs[1])
    return [torch.matmul(a, _tensor(ctx, inputs[1], a))]


def _softmax(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    rank = x.dim()
    if ctx.opset >= 13:
        return [torch.softmax(x, dim=_axis(int(attrs.get("axis", -1)), rank))]
    # Before opset 13: the input is coerced to 2D at `axis` and normalised over the second part.
    axis = _axis(int(attrs.get("axis", 1)), rank)
    shape = [int(d) for d in x.shape]
    outer = math.prod(shape[:axis])
    return [torch.softmax(x.reshape(outer, -1), dim=1).reshape(shape)]


def _argmax(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    axis = _axis(int(attrs.get("axis", 0)), x.dim())
    keepdims = bool(attrs.get("keepdims", 1))
    if attrs.get("select_last_index", 0):
        flipped = torch.argmax(x.flip(axis), dim=axis, keepdim=keepdims)
        return [int(x.shape[axis]) - 1 - flipped]
    return [torch.argmax(x, dim=axis, keepdim=keepdims)]


def _transpose(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    rank = len(x.shape)
    perm = [int(p) for p in attrs.get("perm", list(reversed(range(rank))))]
    if _static(x):
        return [np.transpose(x, perm)]
    return [x.permute(perm)]


def _pad(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x = inputs[0]
    rank = x.dim()
    mode = attrs.get("mode", "constant")
    if ctx.opset < 11:
        pads = [int(p) for p in attrs["pads"]]
        value = float(attrs.get("value", 0.0))
    else:
        pads = _ints(ctx, inputs[1], "Pad's pads")
        value_input = inputs[2] if len(inputs) > 2 else None
        value = 0.0 if value_input is None else float(_scalar(ctx, value_input))
    axes = list(range(rank))
    if ctx.opset >= 18 and len(inputs) > 3 and inputs[3] is not None:
        axes = [_axis(a, rank) for a in _ints(ctx, inputs[3], "Pad's axes")]
    begins, ends = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begins[axis], ends[axis] = pads[i], pads[len(axes) + i]
    # F.pad wants only the trailing dimensions that are padded.
    first = next((i for i in range(rank) if begins[i] or ends[i]), rank)
    if first == rank:
        return [x]
    torch_pads = _torch_pad(begins[first:], ends[first:])
    if mode == "constant":
        return [F.pad(x, torch_pads, value=value)]
    torch_mode = {"reflect": "reflect", "edge": "replicate"}.get(mode)
    if torch_mode is None or first < 2:
        raise HarnessError(f"{ctx.node}: Pad mode {mode!r} over these axes is not supported")
    return [F.pad(x, torch_pads, mode=torch_mode)]


def _scalar(ctx: Context, value: Value) -> float:
    if not _static(value):
        raise HarnessError(f"{ctx.node}: Pad's constant value must be a constant")
    return float(np.asarray(value).reshape(-1)[0])


def _identity(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    return [inputs[0]]


def _cast(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    x, to = inputs[0], int(attrs["to"])
    if _static(x):
        return [x.astype(helper.tensor_dtype_to_np_dtype(to))]
    dtype = _TORCH_DTYPES.get(to)
    if dtype is None:
        raise HarnessError(f"{ctx.node}: Cast to {onnx.TensorProto.DataType.Name(to)}")
    if dtype == torch.float32 and x.is_floating_point():
        return [x]  # keep the engine's precision: weights were converted, activations follow
    return [x.to(dtype)]


def _shape(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    dims = [int(d) for d in inputs[0].shape]
    start = int(attrs.get("start", 0))
    end = attrs.get("end")
    return [np.array(dims[start : None if end is None else int(end)], dtype=np.int64)]


def _gather(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    data, indices = inputs[0], inputs[1]
    rank = len(data.shape)
    axis = _axis(int(attrs.get("axis", 0)), rank)
    if _static(data) and _static(indices):
        return [np.take(data, indices, axis=axis)]
    size = int(data.shape[axis])
    index = np.asarray(_ints(ctx, indices, "Gather's indices")).reshape(np.shape(indices))
    index = np.where(index < 0, index + size, index)
    if index.ndim == 0:
        return [data.select(axis, int(index))]
    picked = torch.index_select(data, axis, torch.as_tensor(index.reshape(-1), device=ctx.device))
    shape = [int(d) for d in data.shape]
    return [picked.reshape(shape[:axis] + list(index.shape) + shape[axis + 1 :])]


def _concat(ctx: Context, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
    parts = [v for v in inputs if v is not None]
    axis = int(attrs["axis"])
    if all(_static(v) for v in parts):
        return [np.concatenate(parts, axis=axis)]
    like = next(v for v in parts if not _static(v))
    return [torch.cat([_tensor(ctx, v, like) for v in parts], dim=axis)]


HANDLERS: dict[str, Handler] = {
    "Add": _binary(np.add, torch.add),
    "ArgMax": _argmax,
    "AveragePool": _average_pool,
    "BatchNormalization": _batch_norm,
    "Cast": _cast,
    "Concat": _concat,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "Div": _binary(_numpy_div, _torch_div),
    "Flatten": _flatten,
    "Gather": _gather,
    "Gemm": _gemm,
    "GlobalAveragePool": _global_average_pool,
    "Identity": _identity,
    "InstanceNormalization": _instance_norm,
    "MatMul": _matmul,
    "MaxPool": _max_pool,
    "Mul": _binary(np.multiply, torch.mul),
    "Pad": _pad,
    "ReduceMean": _reduce_mean,
    "Relu": _relu,
    "Reshape": _reshape,
    "Resize": _resize,
    "Shape": _shape,
    "Softmax": _softmax,
    "Squeeze": _squeeze,
    "Sub": _binary(np.subtract, torch.sub),
    "Transpose": _transpose,
    "Unsqueeze": _unsqueeze,
}
# Inputs that operators read as numbers when tracing (pads, shapes, axes): a float constant there
# is handed over as its numpy value, not as the buffer other operators get.
STATIC_INPUTS: dict[str, tuple[int, ...]] = {
    "Pad": (1, 2, 3),
    "Reshape": (1,),
    "Resize": (1, 2, 3),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "ReduceMean": (1,),
}
SMALL_CONSTANT = 64  # elements: float constants up to this size are also kept as numpy values
# Constant nodes are evaluated when the module is built; they have no run-time handler.
if set(HANDLERS) | {"Constant"} != SUPPORTED_OPS:
    raise AssertionError("torch_module.HANDLERS and onnx_to_torch.SUPPORTED_OPS disagree")


# ---------------------------------------------------------------------------------------------------
# The module


@dataclass(frozen=True)
class _Step:
    handler: Handler
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]
    label: str
    static_inputs: tuple[int, ...]  # positions read as numbers (see STATIC_INPUTS)


def _constant_value(attrs: dict[str, Any]) -> np.ndarray[Any, Any]:
    if "value" in attrs:
        return np.asarray(attrs["value"])
    for key, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if key in attrs:
            return np.asarray(attrs[key], dtype=dtype)
    raise HarnessError(f"Constant with attributes {sorted(attrs)} is not supported")


class OnnxGraphModule(torch.nn.Module):  # type: ignore[misc]
    """Runs an ONNX graph's nodes (those the requested outputs need) with torch operators."""

    def __init__(
        self,
        model: onnx.ModelProto,
        output_names: Sequence[str] | None = None,
        extra_handlers: dict[str, Handler] | None = None,
    ) -> None:
        """`extra_handlers`: operators of other domains (the FP8 engine's), by op_name."""
        super().__init__()
        graph = model.graph
        self.opset = default_opset(model)
        self.input_names = [value.name for value in graph_inputs(model)]
        self.output_names = list(output_names or [output.name for output in graph.output])
        self._static: dict[str, np.ndarray[Any, Any]] = {}
        self._buffer_of: dict[str, str] = {}
        self._small_floats: dict[str, np.ndarray[Any, Any]] = {}
        for init in graph.initializer:
            self._add_constant(init.name, numpy_helper.to_array(init))
        needed = self._needed_nodes(graph)
        self._steps: list[_Step] = []
        for index, node in enumerate(graph.node):
            if index not in needed:
                continue
            label = f"{op_name(node)} {node.name or node.output[0]!r}"
            if op_name(node) == "Constant":
                self._add_constant(node.output[0], _constant_value(attributes(node)))
                continue
            handler = (extra_handlers or {}).get(op_name(node)) or HANDLERS.get(op_name(node))
            if handler is None:
                raise HarnessError(f"unsupported ONNX operator {op_name(node)} ({label})")
            self._steps.append(
                _Step(
                    handler,
                    tuple(node.input),
                    tuple(node.output),
                    attributes(node),
                    label,
                    STATIC_INPUTS.get(op_name(node), ()),
                )
            )

    def _add_constant(self, name: str, array: np.ndarray[Any, Any]) -> None:
        if np.issubdtype(array.dtype, np.floating):
            attr = f"const{len(self._buffer_of)}"
            self.register_buffer(attr, torch.from_numpy(np.array(array, copy=True)))
            self._buffer_of[name] = attr
            if array.size <= SMALL_CONSTANT:
                self._small_floats[name] = np.array(array, copy=True)
        else:
            self._static[name] = np.array(array, copy=True)

    def _needed_nodes(self, graph: onnx.GraphProto) -> set[int]:
        """Indices of the nodes the requested outputs depend on."""
        nodes = list(graph.node)
        producer = {out: index for index, node in enumerate(nodes) for out in node.output if out}
        known = {output.name for output in graph.output}
        missing = [name for name in self.output_names if name not in producer]
        missing = [name for name in missing if name not in self.input_names]
        if missing:
            raise HarnessError(
                f"the model computes no {', '.join(map(repr, missing))} "
                f"(its outputs: {', '.join(sorted(known))})"
            )
        needed: set[int] = set()
        pending = list(self.output_names)
        while pending:
            index = producer.get(pending.pop())
            if index is None or index in needed:
                continue
            needed.add(index)
            pending += [name for name in nodes[index].input if name]
        return needed

    def forward(self, *inputs: Any) -> tuple[Any, ...]:
        if len(inputs) != len(self.input_names):
            raise HarnessError(f"the graph takes {len(self.input_names)} inputs, got {len(inputs)}")
        values: dict[str, Value] = dict(self._static)
        for name, attr in self._buffer_of.items():
            values[name] = getattr(self, attr)
        values.update(zip(self.input_names, inputs, strict=True))
        float_dtype = next((b.dtype for b in self.buffers() if b.is_floating_point()), None)
        ctx = Context(self.opset, inputs[0].device, float_dtype or torch.float32)
        for step in self._steps:
            ctx.node = step.label
            args = [values[name] if name else None for name in step.inputs]
            for position in step.static_inputs:
                name = step.inputs[position] if position < len(step.inputs) else ""
                if name in self._small_floats:
                    args[position] = self._small_floats[name]
            results = step.handler(ctx, args, step.attrs)
            for name, result in zip(step.outputs, results, strict=False):
                if name:
                    values[name] = result
        return tuple(_tensor(ctx, values[name]) for name in self.output_names)


class EngineModule(torch.nn.Module):  # type: ignore[misc]
    """What an engine compiles: fp32 input in, cast (and laid out) for the engine's precision,
    the graph, float outputs back in fp32 (the interface of the ONNX model)."""

    def __init__(self, graph: OnnxGraphModule, dtype: Any, channels_last: bool) -> None:
        super().__init__()
        # Not `self.graph`: an exported GraphModule has its own `graph` attribute.
        self.onnx_graph = graph.to(dtype)
        self.dtype = dtype
        self.channels_last = channels_last
        if channels_last:  # 2D convolutions' weights NHWC, 3D ones' NDHWC
            for parameter in [*self.onnx_graph.parameters(), *self.onnx_graph.buffers()]:
                layout = _CHANNELS_LAST.get(parameter.dim())
                if layout is not None:
                    parameter.data = parameter.data.contiguous(memory_format=layout)

    def forward(self, x: Any) -> tuple[Any, ...]:
        outputs = self.graph_outputs(x)
        return tuple(o.float() if o.is_floating_point() else o for o in outputs)

    def graph_outputs(self, x: Any) -> tuple[Any, ...]:
        """The graph's outputs in the engine's precision: for an engine that computes on them
        further before anything leaves the GPU (RetinaNet's postprocessing)."""
        x = x.to(self.dtype)
        layout = _CHANNELS_LAST.get(x.dim()) if self.channels_last else None
        if layout is not None:
            x = x.contiguous(memory_format=layout)
        return tuple(self.onnx_graph(x))


_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}  # by tensor rank
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
