"""Triton kernels that give the torch Llama engine's FP8 products their inputs in one launch each
(options.py's `fused`): RMSNorm then the row-wise e4m3 quantization (with the residual add before
it, where there is one), SiLU(gate) x up then the quantization, and the quantization alone (the
output projection's input: engines/fp8_row_kernels.py's, shared); and the rotary embedding of the
queries and keys. Unfused, each is a chain of small torch kernels: RMSNorm about eight, the
quantization five (fp8_linear.row_quantized), SiLU and the product two, the rotary about ten; at a
decode step of 173 rows those ~70 launches a layer (5,600 a step) took about a third of the step's
59 ms on an H200, most of it kernels too small to fill the GPU (docs/llama2-70b.md). Here a layer
has five.

Each program here owns one row (a token) and walks it in chunks of CHUNK elements: a pass for the
sum of squares (RMSNorm), one for the largest |value| (the row's scale), one to write the e4m3
bytes; the row's few kilobytes stay in L1/L2 between passes, and the input is read again rather than
kept, so any width runs without spilling registers. The arithmetic is the unfused torch path's, in
its order and roundings: the residual sum and the normalised row are rounded to the model's dtype
before anything reads them (as torch's bf16 tensors are), products and sums in float32, the scale
max(|y|, 1e-12) / 448 and the division by it IEEE-rounded (torch divides so); only the sums' order
and rsqrt's last bit may differ, so an e4m3 byte may rarely round the other way.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

from typing import Any

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

# The row quantization these kernels end in, and the quantization alone (the output projection's
# input: `quantized`, elementwise.py's twin), shared with DLRM-v2's FP8 dense part.
from mlperf_harness.engines.fp8_row_kernels import (
    CHUNK,
    WARPS,
    outputs,
    row_scale,
    store_e4m3,
)
from mlperf_harness.engines.fp8_row_kernels import quantized as quantized


@triton.jit  # type: ignore[untyped-decorator]
def _residual(x_ptr, delta_ptr, offsets, mask, HAS_DELTA: tl.constexpr):  # type: ignore[no-untyped-def]
    """x (+ delta, summed in float32 and rounded to x's dtype, as torch adds two bf16 tensors)."""
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    if HAS_DELTA:
        delta = tl.load(delta_ptr + offsets, mask=mask, other=0.0)
        x = (x.to(tl.float32) + delta.to(tl.float32)).to(x.dtype)
    return x


@triton.jit
def _normalised(x, w, rstd):  # type: ignore[no-untyped-def]
    """RMSNorm's output as the unfused path rounds it: (x * rstd) * w in float32, then x's dtype."""
    return ((x.to(tl.float32) * rstd) * w.to(tl.float32)).to(x.dtype).to(tl.float32)


@triton.jit  # type: ignore[untyped-decorator]
def norm_quant_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # [rows, width] the residual stream, the model's dtype, contiguous
    delta_ptr,  # [rows, width] what is added to it first (HAS_DELTA), contiguous
    sum_ptr,  # [rows, width] x + delta written here (HAS_DELTA): the next residual stream
    w_ptr,  # [width] RMSNorm's weight
    q_ptr,  # [rows, width] e4m3 out
    scale_ptr,  # float32 [rows] out: each row's scale
    width,
    eps,
    HAS_DELTA: tl.constexpr,
    CHUNK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    base = row * width
    squares = tl.zeros([CHUNK], tl.float32)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        x = _residual(x_ptr, delta_ptr, base + cols, mask, HAS_DELTA)
        if HAS_DELTA:
            tl.store(sum_ptr + base + cols, x, mask=mask)
        xf = x.to(tl.float32)
        squares += xf * xf
    rstd = tl.math.rsqrt(tl.sum(squares, axis=0) / width + eps)
    largest = tl.zeros([CHUNK], tl.float32)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        x = _residual(x_ptr, delta_ptr, base + cols, mask, HAS_DELTA)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        largest = tl.maximum(largest, tl.abs(_normalised(x, w, rstd)))
    scale = row_scale(largest, scale_ptr, row)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        x = _residual(x_ptr, delta_ptr, base + cols, mask, HAS_DELTA)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        store_e4m3(q_ptr, base + cols, _normalised(x, w, rstd), scale, mask)


@triton.jit
def _swiglu(gate_up_ptr, offsets, inner, mask):  # type: ignore[no-untyped-def]
    """SiLU(gate) x up as torch computes it on bf16 tensors: SiLU in float32 rounded to the
    dtype, then the product in float32 rounded to the dtype."""
    gate = tl.load(gate_up_ptr + offsets, mask=mask, other=0.0)
    up = tl.load(gate_up_ptr + offsets + inner, mask=mask, other=0.0)
    g = gate.to(tl.float32)
    silu = (g / (1.0 + tl.exp(-g))).to(gate.dtype).to(tl.float32)
    return (silu * up.to(tl.float32)).to(gate.dtype).to(tl.float32)


@triton.jit  # type: ignore[untyped-decorator]
def swiglu_quant_kernel(  # type: ignore[no-untyped-def]
    gate_up_ptr,  # [rows, 2 inner] gate then up, the model's dtype, contiguous
    q_ptr,  # [rows, inner] e4m3 out
    scale_ptr,  # float32 [rows] out
    inner,
    CHUNK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    source, target = row * 2 * inner, row * inner
    largest = tl.zeros([CHUNK], tl.float32)
    for start in range(0, inner, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < inner
        largest = tl.maximum(largest, tl.abs(_swiglu(gate_up_ptr, source + cols, inner, mask)))
    scale = row_scale(largest, scale_ptr, row)
    for start in range(0, inner, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < inner
        y = _swiglu(gate_up_ptr, source + cols, inner, mask)
        store_e4m3(q_ptr, target + cols, y, scale, mask)


@triton.jit  # type: ignore[untyped-decorator]
def rotary_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # [tokens, heads, DIM] the model's dtype, the last dimension contiguous
    cos_ptr,  # float32 [tokens, DIM / 2], contiguous
    sin_ptr,
    out_ptr,  # [tokens, heads, DIM] contiguous
    heads,
    x_token_stride,
    x_head_stride,
    HALF: tl.constexpr,  # DIM / 2
    HALF_PAD: tl.constexpr,  # HALF rounded up to a power of two
    BLOCK_H: tl.constexpr,  # heads a program rotates
):
    """rotate_half in float32 as torch computes it (a x cos - b x sin, b x cos + a x sin, each
    product and the sum rounded in float32), the result rounded to the model's dtype."""
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    col = tl.arange(0, HALF_PAD)[None, :]
    mask = (head < heads) & (col < HALF)
    source = x_ptr + token * x_token_stride + head * x_head_stride + col
    a = tl.load(source, mask=mask, other=0.0)
    b = tl.load(source + HALF, mask=mask, other=0.0)
    cos = tl.load(cos_ptr + token * HALF + col, mask=col < HALF, other=0.0)
    sin = tl.load(sin_ptr + token * HALF + col, mask=col < HALF, other=0.0)
    af, bf = a.to(tl.float32), b.to(tl.float32)
    target = out_ptr + (token * heads + head) * (2 * HALF) + col
    tl.store(target, (af * cos - bf * sin).to(a.dtype), mask=mask)
    tl.store(target + HALF, (bf * cos + af * sin).to(a.dtype), mask=mask)


ROTARY_HEADS = 16  # heads a rotary program takes: 72 of Llama-2-70B's on one GPU in 5 programs


def norm_quantized(torch: Any, x: Any, weight: Any, eps: float) -> tuple[Any, Any]:
    """RMSNorm(x) quantized row-wise: (e4m3 [rows, width], float32 scales [rows, 1])."""
    x = x.contiguous()
    rows, width = x.shape
    q, scale = outputs(torch, rows, width, x.device)
    norm_quant_kernel[(rows,)](
        x, x, x, weight, q, scale, width, eps, HAS_DELTA=False, CHUNK=CHUNK, num_warps=WARPS
    )
    return q, scale


def add_norm_quantized(
    torch: Any, x: Any, delta: Any, weight: Any, eps: float
) -> tuple[Any, Any, Any]:
    """x + delta (the next residual stream) and RMSNorm of it quantized row-wise."""
    x, delta = x.contiguous(), delta.contiguous()
    rows, width = x.shape
    total = torch.empty_like(x)
    q, scale = outputs(torch, rows, width, x.device)
    norm_quant_kernel[(rows,)](
        x, delta, total, weight, q, scale, width, eps, HAS_DELTA=True, CHUNK=CHUNK,
        num_warps=WARPS,
    )  # fmt: skip
    return total, q, scale


def swiglu_quantized(torch: Any, gate_up: Any) -> tuple[Any, Any]:
    """SiLU(gate) x up of gate_up [rows, 2 inner] (gate first), quantized row-wise."""
    gate_up = gate_up.contiguous()
    rows, inner = gate_up.shape[0], gate_up.shape[1] // 2
    q, scale = outputs(torch, rows, inner, gate_up.device)
    swiglu_quant_kernel[(rows,)](gate_up, q, scale, inner, CHUNK=CHUNK, num_warps=WARPS)
    return q, scale


def rotated(torch: Any, x: Any, cos: Any, sin: Any) -> Any:
    """rotate_half rotary of x [tokens, heads, head_dim] (a view whose last dimension is
    contiguous, as the engine's split of its q/k/v product is) by cos and sin [tokens, 1,
    head_dim / 2] float32."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    tokens, heads, dim = x.shape
    half = dim // 2
    out = torch.empty(tokens, heads, dim, dtype=x.dtype, device=x.device)
    cos, sin = cos.reshape(tokens, half).contiguous(), sin.reshape(tokens, half).contiguous()
    grid = (tokens, triton.cdiv(heads, ROTARY_HEADS))
    rotary_kernel[grid](
        x, cos, sin, out, heads, x.stride(0), x.stride(1), HALF=half,
        HALF_PAD=triton.next_power_of_2(half), BLOCK_H=ROTARY_HEADS, num_warps=WARPS,
        enable_fp_fusion=False,  # a x cos - b x sin as two rounded products, not an FMA: torch's
    )  # fmt: skip
    return out
