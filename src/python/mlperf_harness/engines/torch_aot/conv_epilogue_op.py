"""conv_epilogue.py's fused nodes on torch: `mlperf_conv::conv2d_relu`, a custom operator that
torch.export keeps whole. The FP8 engine's program calls it for the convolutions it keeps in fp16
(ResNeXt's grouped 3x3s in RetinaNet: torch_fp8/module.py); a loading process must have imported
this module, which the engine's operators record says (torch_fp8/exported.py).

On CUDA it is cuDNN's fused convolution (`torch.cudnn_convolution_relu`, or
`torch.cudnn_convolution_add_relu` with a residual): the bias, the Add and the ReLU applied as cuDNN
stores the output, where conv2d then relu, run eagerly as the exported program runs them, add a
pass over the output for the bias and one for the ReLU. Elsewhere it is conv2d, the Add and relu
one after another, which is what the fused form computes (the CPU tests run it). Its output has the
layout the fake says (channels-last where the input is).

The fp16 engines (AOTInductor) do not use it: Inductor fuses the bias and ReLU into a pass of its
own, and its calls of this operator cost a strided copy each (commit 4a786da, docs/retinanet.md).

Imports torch: GPU hosts and the development environment only.
"""

from __future__ import annotations

from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_aot.conv_epilogue import OPS
from mlperf_harness.engines.torch_aot.torch_module import Context, Handler


def _layout(x: torch.Tensor) -> Any:
    if x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    return torch.contiguous_format


@torch.library.custom_op("mlperf_conv::conv2d_relu", mutates_args=())  # type: ignore[untyped-decorator]
def conv2d_relu(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    residual: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    groups: int,
) -> torch.Tensor:
    """relu(conv2d(x, weight, bias) + residual), the residual optional; cuDNN's fused form on CUDA."""
    if x.is_cuda:
        if residual is None:
            y = torch.cudnn_convolution_relu(x, weight, bias, stride, padding, dilation, groups)
        else:
            y = torch.cudnn_convolution_add_relu(
                x, weight, residual, 1.0, bias, stride, padding, dilation, groups
            )
    else:
        y = torch.nn.functional.conv2d(x, weight, bias, stride, padding, dilation, groups)
        y = torch.relu(y if residual is None else y + residual)
    return y.contiguous(memory_format=_layout(x))


@conv2d_relu.register_fake  # type: ignore[untyped-decorator]
def _conv2d_relu_fake(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    residual: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    groups: int,
) -> torch.Tensor:
    sizes = [
        (size + 2 * pad - step * (kernel - 1) - 1) // move + 1
        for size, pad, step, kernel, move in zip(
            x.shape[2:], padding, dilation, weight.shape[2:], stride, strict=True
        )
    ]
    shape = (x.shape[0], weight.shape[0], *sizes)
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=_layout(x))


def _geometry(attrs: dict[str, Any]) -> tuple[list[int], list[int], list[int], int]:
    """stride, padding (symmetric: conv_epilogue fuses no other), dilation, groups."""
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
    return (
        [int(s) for s in attrs.get("strides", [1, 1])],
        pads[:2],
        [int(d) for d in attrs.get("dilations", [1, 1])],
        int(attrs.get("group", 1)),
    )


def _conv_relu(ctx: Context, inputs: list[Any], attrs: dict[str, Any]) -> list[Any]:
    x, weight, bias = inputs[:3]
    residual = inputs[3] if len(inputs) > 3 else None
    return [torch.ops.mlperf_conv.conv2d_relu(x, weight, bias, residual, *_geometry(attrs))]


# torch_module.OnnxGraphModule's extra_handlers, by onnx_to_torch.op_name: one for both kinds (a
# residual input or not)
HANDLERS: dict[str, Handler] = dict.fromkeys(OPS, _conv_relu)
