"""Row-wise e4m3 quantization in one Triton launch (fp8_linear.row_quantized's arithmetic), and the
pieces kernels that quantize what they compute are built from: each row's scale and its e4m3
bytes. Shared by the Llama engine's fused inputs (torch_llama/fused_kernels.py) and DLRM-v2's
FP8 dense part (benchmarks/dlrm_v2/fp8_rows.py).

Rows of up to ONE_PASS_WIDTH elements are read once: a program holds a tile of TILE elements in
registers (one row, or several narrow ones), takes each row's largest |value| (its scale) and
writes the bytes from the same registers. Wider rows take quant_kernel: a program owns one row and
walks it in chunks of CHUNK elements, a pass for the scale and one to write the bytes, the row's
kilobytes in L1/L2 between them, so any width runs without spilling registers. A program a row of
a few hundred elements, in two passes, kept an H200 at an eighth of its memory's speed (DLRM-v2's
FP8 dense part, 2026-11-30: 1.5 ms of a 6.4 ms batch). The scale is max(|y|, 1e-12) / 448 and the
division by it IEEE-rounded, as torch divides: the same bytes as row_quantized either way.

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
WARPS = 4  # the chunked kernel's: 4 ran faster than 8 on an H200 at every width (row_quant_ab)
# One-pass programs hold TILE elements (several rows of up to TILE, 16 float32 a thread at 4
# warps) or one wider row (a warp more per 1,024 elements), up to ONE_PASS_WIDTH. Chosen on an
# H200 (row_quant_ab, 2026-11-30): at widths 512, 1,024 and 3,456 the fastest forms were within
# 5% of these, 1.8x to 2.2x the chunked kernel at 512 and 1,024, 7% faster at 3,456.
TILE = 2048
ONE_PASS_WIDTH = 8192


def one_pass_tile(width: int) -> tuple[int, int, int]:
    """(the row's block, a power of two >= width; rows a program holds; warps) of a one-pass
    kernel at this width."""
    block = triton.next_power_of_2(width)
    rows = max(1, TILE // block)
    return block, rows, max(4, block * rows // 1024)


@triton.jit
def row_scale(largest, scale_ptr, row):  # type: ignore[no-untyped-def]
    """The row's scale from its chunks' largest |y|, as fp8_linear.row_quantized makes it (the
    maximum clamped at 1e-12, over e4m3's largest normal, E4M3_MAX), stored at scale_ptr[row]."""
    scale = tl.maximum(tl.max(largest, axis=0), 1e-12) / 448.0
    tl.store(scale_ptr + row, scale)
    return scale


@triton.jit
def rows_scale(magnitudes, scale_ptr, row, row_mask):  # type: ignore[no-untyped-def]
    """Each row's scale from its |y| [rows, block] (row_scale's arithmetic, a row at a time),
    stored at scale_ptr[row] where row_mask holds."""
    scale = tl.maximum(tl.max(magnitudes, axis=1), 1e-12) / 448.0
    tl.store(scale_ptr + row, scale, mask=row_mask)
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


@triton.jit  # type: ignore[untyped-decorator]
def quant_rows_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # [rows, width] (rows x_stride apart), any float dtype
    bias_ptr,  # [width] added first (HAS_BIAS); unread otherwise
    q_ptr,  # [rows, width] e4m3 out, contiguous
    scale_ptr,  # float32 [rows] out
    rows,
    width,
    x_stride,
    HAS_BIAS: tl.constexpr,
    RELU: tl.constexpr,
    BLOCK: tl.constexpr,  # a power of two >= width
    ROWS: tl.constexpr,  # rows a program holds
):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)[None, :]
    row_mask = row < rows
    mask = row_mask[:, None] & (cols < width)
    y = _prologue(x_ptr, bias_ptr, row[:, None] * x_stride + cols, cols, mask, HAS_BIAS, RELU)
    scale = rows_scale(tl.abs(y), scale_ptr, row, row_mask)
    store_e4m3(q_ptr, row[:, None] * width + cols, y, scale[:, None], mask)


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
    bias_or_x = x if bias is None else bias
    if rows and width <= ONE_PASS_WIDTH:
        block, per_program, warps = one_pass_tile(width)
        quant_rows_kernel[(triton.cdiv(rows, per_program),)](
            x, bias_or_x, q, scale, rows, width, x.stride(0), HAS_BIAS=bias is not None,
            RELU=relu, BLOCK=block, ROWS=per_program, num_warps=warps,
        )  # fmt: skip
    elif rows:
        quant_kernel[(rows,)](
            x, bias_or_x, q, scale, width, x.stride(0),
            HAS_BIAS=bias is not None, RELU=relu, CHUNK=CHUNK, num_warps=WARPS,
        )  # fmt: skip
    return q, scale
