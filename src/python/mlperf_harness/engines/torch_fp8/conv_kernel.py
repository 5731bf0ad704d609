"""The FP8 convolution as one Triton kernel: implicit GEMM over NHWC e4m3 tensors, epilogue fused.

Rows of the GEMM are output pixels (n, p, q), columns output channels, the reduction runs over the
R*S taps times the input channels in blocks of BLOCK_K (which divide the channel count, so a block
never straddles two taps). An input with no fused producer (the stem's max pool) is read in fp16 and
quantized as it is loaded (A_FP16), instead of by a separate cast. e4m3 tensors travel as uint8 (their
bits): the compiler around the kernels then never handles an 8-bit float (AOTInductor could not
generate code for e4m3 buffers of its own), and the kernel reinterprets them. Operands are loaded K-contiguous, the layout Hopper's 8-bit tensor-core
instructions read. The epilogue applies the per-channel dequantization (`alpha`), the bias, the
residual (NHWC like the output; e4m3 times its scale, or fp16), the relu, and stores fp16 and/or
e4m3 (scaled for the next convolution): the whole bottleneck tail in one kernel, as TensorRT fuses
it.

PREFETCH issues the epilogue's loads (alpha, bias, the residual) before the reduction loop, so their
latency overlaps the operands' loads and the MMAs instead of following them: the 1x1 expansions make
one or two reduction steps, and loading the residual only after them left each program waiting on
it. It holds the residual tile in registers through the loop, so it is a tuning choice (tuning.py
tries it on the layers with a residual), not always better: on an H100 it won on stage 1's three
expansions only (216 us against 236), docs/performance.md.

BATCH_ARGUMENTS: the only argument of each FP8 kernel that changes with the engine's batch size
(here M, the output pixels) is not specialised on. Triton compiles a kernel anew for every
specialisation of its integer arguments (a value of 1 made a constant, divisibility by 16), so the
engines of a ladder, which differ only in batch size, shared their compiles only where those pixel
and image counts happened to agree: batches 1 and 8 compiled many candidates anew (their tuning
took 23-25 s and 96-105 s on an H200, against 4-7 s for batches 16-128). Divisibility buys nothing
here: compiled for sm_90, each kernel's PTX is the same with and without it
(test_fp8_kernels_compile_for_hopper); at batch 1, where a count of 1 image was a constant, a
kernel now reads it as an argument, a few instructions outside the reduction loop.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8.epilogue import to_e4m3
from mlperf_harness.engines.torch_fp8.tile_order import tile_origin

# The argument a batch size changes (the module's docstring, BATCH_ARGUMENTS).
BATCH_ARGUMENTS = ("M",)


@triton.jit(do_not_specialize=BATCH_ARGUMENTS)  # type: ignore[untyped-decorator]
def conv_fp8_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # e4m3 bits [N, H, W, C] (fp16 with A_FP16)
    w_ptr,  # e4m3 bits [K, R, S, C]
    alpha_ptr,  # fp32 [K]
    bias_ptr,  # fp32 [K]
    res_ptr,  # e4m3 bits [N, P, Q, K] (fp16 without RES_E4M3; unused without HAS_RES)
    y16_ptr,  # fp16 [N, P, Q, K] (unused without STORE16)
    y8_ptr,  # e4m3 bits [N, P, Q, K] (unused without STORE8)
    in_scale,  # A_FP16: 1 / the input's e4m3 scale
    res_scale,  # RES_E4M3: the residual's e4m3 scale
    out8_scale,
    M,
    H,
    W,
    C,
    P,
    Q,
    K,
    stride,
    pad_h,
    pad_w,
    R: tl.constexpr,
    S: tl.constexpr,
    POINTWISE: tl.constexpr,  # 1x1, stride 1, no padding: rows are input pixels
    A_FP16: tl.constexpr,
    HAS_RES: tl.constexpr,
    RES_E4M3: tl.constexpr,
    RELU: tl.constexpr,
    STORE16: tl.constexpr,
    STORE8: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PREFETCH: tl.constexpr,  # the epilogue's loads before the reduction loop (the docstring)
):
    row, column = tile_origin(tl.program_id(0), M, K, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = row + tl.arange(0, BLOCK_M)
    offs_n = column + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < K
    reduction = R * S * C

    if not POINTWISE:
        image = offs_m // (P * Q)
        pixel = offs_m % (P * Q)
        h_first = (pixel // Q) * stride - pad_h
        w_first = (pixel % Q) * stride - pad_w

    if PREFETCH:
        alpha = tl.load(alpha_ptr + offs_n, mask=n_ok, other=0.0)
        bias = tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0)
        if HAS_RES:
            res = tl.load(
                res_ptr + offs_m[:, None] * K + offs_n[None, :],
                mask=m_ok[:, None] & n_ok[None, :],
                other=0,
            )

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in tl.range(0, reduction, BLOCK_K):
        if POINTWISE:
            a_rows = offs_m * C + kk
            a_ok = m_ok
        else:
            tap = kk // C
            channel = kk - tap * C
            h = h_first + tap // S
            w = w_first + tap % S
            a_ok = m_ok & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            a_rows = ((image * H + h) * W + w) * C + channel
        a = tl.load(x_ptr + a_rows[:, None] + offs_k[None, :], mask=a_ok[:, None], other=0)
        if A_FP16:  # noqa: SIM108 (a compile-time branch, as every constexpr `if` here)
            a = to_e4m3(a.to(tl.float32), in_scale)
        else:
            a = a.to(tl.float8e4nv, bitcast=True)
        b = tl.load(
            w_ptr + offs_n[None, :] * reduction + kk + offs_k[:, None], mask=n_ok[None, :], other=0
        )
        acc = tl.dot(a, b.to(tl.float8e4nv, bitcast=True), acc)

    # The output's offsets are computed here, after the loop, in both forms: kept from before it
    # they would hold a tile of registers through the loop.
    out = offs_m[:, None] * K + offs_n[None, :]
    ok = m_ok[:, None] & n_ok[None, :]
    if not PREFETCH:
        alpha = tl.load(alpha_ptr + offs_n, mask=n_ok, other=0.0)
        bias = tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0)
        if HAS_RES:
            res = tl.load(res_ptr + out, mask=ok, other=0)
    y = acc * alpha[None, :] + bias[None, :]
    if HAS_RES:
        if RES_E4M3:
            y += res.to(tl.float8e4nv, bitcast=True).to(tl.float32) * res_scale
        else:
            y += res.to(tl.float32)
    if RELU:
        y = tl.maximum(y, 0.0)
    if STORE16:
        tl.store(y16_ptr + out, y.to(tl.float16), mask=ok)
    if STORE8:
        tl.store(y8_ptr + out, to_e4m3(y, out8_scale).to(tl.uint8, bitcast=True), mask=ok)


def grid_size(m: int, k: int, block_m: int, block_n: int) -> int:
    return int(triton.cdiv(m, block_m) * triton.cdiv(k, block_n))
