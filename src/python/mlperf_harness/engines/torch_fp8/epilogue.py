"""The FP8 kernels' epilogue math as jit functions (Triton inlines them): `epilogue` for the TMA
kernels (pointwise_kernel.py, spatial_kernel.py), which store through descriptors of their own, and
`to_e4m3`, the saturating cast every kernel quantizes with (the convolutions' outputs, the pointer
kernel's fp16 input, the max pools').

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8 import scales

# scales.E4M3_MAX for the kernels (a global a jit function reads must be a constexpr).
E4M3_MAX = tl.constexpr(scales.E4M3_MAX)


@triton.jit  # type: ignore[untyped-decorator]
def epilogue(  # type: ignore[no-untyped-def]
    acc,  # fp32 [rows, BLOCK_N]: the tile's accumulated products
    res,  # the residual's tile, e4m3 (RES_E4M3) or fp16 (unused without HAS_RES)
    column,  # the tile's first output channel
    alpha_ptr,
    bias_ptr,
    res_scale,
    K,
    HAS_RES: tl.constexpr,
    RES_E4M3: tl.constexpr,
    RELU: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """acc * alpha + bias (+ residual) (relu), in fp32: the per-channel dequantization and the
    fused bottleneck tail, as conv_kernel.py computes them."""
    offs_n = column + tl.arange(0, BLOCK_N)
    n_ok = offs_n < K
    alpha = tl.load(alpha_ptr + offs_n, mask=n_ok, other=0.0)
    bias = tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0)
    y = acc * alpha[None, :] + bias[None, :]
    if HAS_RES:
        if RES_E4M3:
            y += res.to(tl.float32) * res_scale
        else:
            y += res.to(tl.float32)
    if RELU:
        y = tl.maximum(y, 0.0)
    return y


@triton.jit
def to_e4m3(y, scale):  # type: ignore[no-untyped-def]
    """y times the next convolution's input scale, saturated to e4m3."""
    return tl.minimum(tl.maximum(y * scale, -E4M3_MAX), E4M3_MAX).to(tl.float8e4nv)
