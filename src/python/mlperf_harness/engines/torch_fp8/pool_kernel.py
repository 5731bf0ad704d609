"""The FP8 engine's max pool as one Triton kernel: the window's maximum, the bias of the convolution
before it (moved here: plan.py says why that is exact), relu (when fused) and the e4m3 store in one
pass over an NHWC fp16 tensor (plan.Fp8PoolLayer). The padding may differ by side (TensorFlow's SAME
pooling, as tf2onnx writes it, pads only after the last row and column).

Rows are output pixels (n, p, q), columns channels; each program takes a block of both and reads
the window's taps one after another, contiguous over channels. Padding never wins the maximum (it
reads as -inf), as in ONNX's MaxPool.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8.epilogue import to_e4m3

BLOCK_M, BLOCK_C, WARPS = 64, 64, 4


@triton.jit  # type: ignore[untyped-decorator]
def max_pool_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # fp16 [N, H, W, C]
    y16_ptr,  # fp16 [N, P, Q, C] (unused without STORE16)
    y8_ptr,  # e4m3 bits [N, P, Q, C]
    bias_ptr,  # fp32 [C] (unused without BIAS)
    out8_scale,
    M,
    H,
    W,
    C,
    P,
    Q,
    stride,
    pad_h,  # the padding before the first row and column (after the last: the output's size)
    pad_w,
    KERNEL: tl.constexpr,
    BIAS: tl.constexpr,
    RELU: tl.constexpr,
    STORE16: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    m_ok = offs_m < M
    c_ok = offs_c < C
    image = offs_m // (P * Q)
    pixel = offs_m % (P * Q)
    h_first = (pixel // Q) * stride - pad_h
    w_first = (pixel % Q) * stride - pad_w
    y = tl.full((BLOCK_M, BLOCK_C), float("-inf"), dtype=tl.float32)
    for r in tl.static_range(KERNEL):
        for s in tl.static_range(KERNEL):
            h = h_first + r
            w = w_first + s
            ok = m_ok & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            rows = ((image * H + h) * W + w) * C
            tap = tl.load(
                x_ptr + rows[:, None] + offs_c[None, :],
                mask=ok[:, None] & c_ok[None, :],
                other=float("-inf"),
            )
            y = tl.maximum(y, tap.to(tl.float32))
    if BIAS:  # rounded to fp16, as the convolution's fp16 output plus its bias was
        bias = tl.load(bias_ptr + offs_c, mask=c_ok, other=0.0)
        y = (y + bias[None, :]).to(tl.float16).to(tl.float32)
    if RELU:
        y = tl.maximum(y, 0.0)
    out = offs_m[:, None] * C + offs_c[None, :]
    ok = m_ok[:, None] & c_ok[None, :]
    if STORE16:
        tl.store(y16_ptr + out, y.to(tl.float16), mask=ok)
    tl.store(y8_ptr + out, to_e4m3(y, out8_scale).to(tl.uint8, bitcast=True), mask=ok)


def grid(m: int, c: int) -> tuple[int, int]:
    return (int(triton.cdiv(m, BLOCK_M)), int(triton.cdiv(c, BLOCK_C)))
