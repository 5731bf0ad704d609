"""Row-wise e4m3 quantization as one Triton kernel (fp8_linear.row_quantized's arithmetic), and the
pieces kernels that quantize what they compute are built from: each row's scale and its e4m3
bytes. Shared by the Llama engine's fused inputs (torch_llama/fused_kernels.py) and DLRM-v2's
FP8 dense part (benchmarks/dlrm_v2/fp8_rows.py).

A program owns one row and walks it in chunks of CHUNK elements: a pass for the largest |value|
(the row's scale), one to write the bytes; the row's few kilobytes stay in L1/L2 between passes,
so any width runs without spilling registers. The scale is max(|y|, 1e-12) / 448 and the
division by it IEEE-rounded, as torch divides: the same bytes as row_quantized.

`quantized` may first add a bias (in float32) and take a ReLU: the input of a product whose
previous product's bias and activation were left for it (DLRM-v2's MLPs), one pass instead of
three.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

from typing import Any

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

CHUNK = 1024  # elements of a row a loop step holds (8 per thread at 4 warps)
WARPS = 4  # not tuned: a row is a few kilobytes; the device profiles say what the kernels cost


@triton.jit
def row_scale(largest, scale_ptr, row):  # type: ignore[no-untyped-def]
    """The row's scale from its chunks' largest |y|, as fp8_linear.row_quantized makes it (the
    maximum clamped at 1e-12, over e4m3's largest normal, E4M3_MAX), stored at scale_ptr[row]."""
    scale = tl.maximum(tl.max(largest, axis=0), 1e-12) / 448.0
    tl.store(scale_ptr + row, scale)
    return scale


@triton.jit
def store_e4m3(q_ptr, offsets, y, scale, mask):  # type: ignore[no-untyped-def]
    """y / scale (IEEE-rounded, as torch divides) as e4m3 bytes."""
    tl.store(q_ptr + offsets, tl.div_rn(y, scale).to(tl.float8e4nv), mask=mask)


@triton.jit  # type: ignore[untyped-decorator]
def _prologue(x_ptr, bias_ptr, offsets, cols, mask, HAS_BIAS: tl.constexpr, RELU: tl.constexpr):  # type: ignore[no-untyped-def]
    """The row's chunk in float32, its bias added (in float32) and its ReLU taken where asked."""
    y = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    if RELU:
        y = tl.maximum(y, 0.0)
    return y


@triton.jit  # type: ignore[untyped-decorator]
def quant_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # [rows, width] (rows x_stride apart), any float dtype
    bias_ptr,  # [width] added first (HAS_BIAS); unread otherwise
    q_ptr,  # [rows, width] e4m3 out, contiguous
    scale_ptr,  # float32 [rows] out
    width,
    x_stride,
    HAS_BIAS: tl.constexpr,
    RELU: tl.constexpr,
    CHUNK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    source, target = row * x_stride, row * width
    largest = tl.zeros([CHUNK], tl.float32)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        y = _prologue(x_ptr, bias_ptr, source + cols, cols, mask, HAS_BIAS, RELU)
        largest = tl.maximum(largest, tl.abs(y))
    scale = row_scale(largest, scale_ptr, row)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        y = _prologue(x_ptr, bias_ptr, source + cols, cols, mask, HAS_BIAS, RELU)
        store_e4m3(q_ptr, target + cols, y, scale, mask)


def outputs(torch: Any, rows: int, width: int, device: Any) -> tuple[Any, Any]:
    """e4m3 [rows, width] and float32 scales [rows, 1], as fp8_linear.row_quantized returns."""
    q = torch.empty(rows, width, dtype=torch.float8_e4m3fn, device=device)
    return q, torch.empty(rows, 1, dtype=torch.float32, device=device)


def quantized(torch: Any, x: Any, bias: Any = None, relu: bool = False) -> tuple[Any, Any]:
    """x [rows, width] (its rows may be further apart: a column slice) quantized row-wise, after
    bias [width] is added and the ReLU taken where given: (e4m3 [rows, width], float32 scales
    [rows, 1]), the bytes of fp8_linear.row_quantized of relu(x + bias) in float32."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    rows, width = x.shape
    q, scale = outputs(torch, rows, width, x.device)
    if rows:
        quant_kernel[(rows,)](
            x, x if bias is None else bias, q, scale, width, x.stride(0),
            HAS_BIAS=bias is not None, RELU=relu, CHUNK=CHUNK, num_warps=WARPS,
        )  # fmt: skip
    return q, scale
