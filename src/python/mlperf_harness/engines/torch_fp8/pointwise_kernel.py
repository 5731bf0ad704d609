"""The FP8 1x1 convolution (stride 1, no padding) as a GEMM on Hopper's tensor-memory accelerator:
the same computation and epilogue as conv_kernel.py, for the layers where it is a plain GEMM.

Rows are the input pixels [M, C] (NHWC, so the tensor as it lies), columns the output channels;
every operand tile and the residual move through TMA descriptors (global <-> shared memory in bulk,
swizzled as the 8-bit tensor-core instructions read it), and the result is written through one too.
conv_kernel.py loads and stores through per-thread pointers: on the 1x1 expansions, bound by their
epilogue's traffic (read the residual, write the block's output), that reached about half of the
bandwidth cuBLAS's FP8 GEMMs reach on the same shapes (docs/performance.md). Which of the two
kernels runs a layer is a tuning choice (KernelConfig.tma; tuning.py times both), so no layer can
get slower.

Descriptors take e4m3 tensors as such (ops.py views the uint8 bits as float8_e4m3fn for them): the
loaded tiles then go to the tensor cores from shared memory with no conversion between.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

E4M3_MAX = tl.constexpr(448.0)  # a global a jit function reads must be a constexpr


@triton.jit  # type: ignore[untyped-decorator]
def pointwise_fp8_kernel(  # type: ignore[no-untyped-def]
    x_desc,  # e4m3 [M, C], blocks [BLOCK_M, BLOCK_K]
    w_desc,  # e4m3 [K, C], blocks [BLOCK_N, BLOCK_K]
    alpha_ptr,  # fp32 [K]
    bias_ptr,  # fp32 [K]
    res_desc,  # e4m3 (RES_E4M3) or fp16 [M, K], blocks [BLOCK_M, BLOCK_N] (unused without HAS_RES)
    y16_desc,  # fp16 [M, K] (unused without STORE16)
    y8_desc,  # e4m3 [M, K] (unused without STORE8)
    res_scale,  # RES_E4M3: the residual's e4m3 scale
    out8_scale,
    M,
    C,
    K,
    HAS_RES: tl.constexpr,
    RES_E4M3: tl.constexpr,
    RELU: tl.constexpr,
    STORE16: tl.constexpr,
    STORE8: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PREFETCH: tl.constexpr,  # the residual's tile requested before the reduction loop
):
    # Grouped ordering, as conv_kernel.py: GROUP_M row blocks share their weight tiles in L2.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(K, BLOCK_N)
    in_group = GROUP_M * blocks_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = tl.minimum(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    row = pid_m * BLOCK_M
    column = pid_n * BLOCK_N

    offs_n = column + tl.arange(0, BLOCK_N)
    n_ok = offs_n < K
    alpha = tl.load(alpha_ptr + offs_n, mask=n_ok, other=0.0)
    bias = tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0)
    if HAS_RES and PREFETCH:
        res = res_desc.load([row, column])

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in tl.range(0, C, BLOCK_K):
        a = x_desc.load([row, kk])
        b = w_desc.load([column, kk])
        acc = tl.dot(a, b.T, acc)

    if HAS_RES and not PREFETCH:
        res = res_desc.load([row, column])
    y = acc * alpha[None, :] + bias[None, :]
    if HAS_RES:
        if RES_E4M3:
            y += res.to(tl.float32) * res_scale
        else:
            y += res.to(tl.float32)
    if RELU:
        y = tl.maximum(y, 0.0)
    # Rows and columns past M and K are outside the descriptors' shapes: TMA does not write them.
    if STORE16:
        y16_desc.store([row, column], y.to(tl.float16))
    if STORE8:
        y8 = tl.minimum(tl.maximum(y * out8_scale, -E4M3_MAX), E4M3_MAX)
        y8_desc.store([row, column], y8.to(tl.float8e4nv))


def grid_size(m: int, k: int, block_m: int, block_n: int) -> int:
    return int(triton.cdiv(m, block_m) * triton.cdiv(k, block_n))
