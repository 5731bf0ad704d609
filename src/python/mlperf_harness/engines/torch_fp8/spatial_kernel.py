"""The FP8 3x3 convolution (stride 1) as an implicit GEMM on Hopper's tensor-memory accelerator:
the computation and epilogue of conv_kernel.py, its operand tiles moved in bulk. A strided 1x1
convolution (the projections of stages 2-4) is the same kernel with R = S = 1 on a strided view of
its input (ops.runs_spatial): its every other row and column, which a descriptor describes as it
lies.

A tile's rows are a BH x BW block of one image's output pixels, its columns BLOCK_N output channels.
For each tap (r, s) and block of input channels, the input tile is the BH x BW block of pixels that
tap reads, loaded through a 4-D descriptor of the NHWC input [N, H, W, C]: its coordinates may lie
outside the image (the padding), where TMA fills zeros, so the padding costs no masks and no
separate pass. The weights [K, R*S*C] are a 2-D descriptor; the residual and the results are 4-D
[N, P, Q, K] like the input, and TMA writes nothing outside the image, so a tile that overhangs its
edge (56, 28, 14 and 7 are not multiples of the power-of-two blocks) is clipped there. Those
overhanging rows are computed for nothing: a block's shape is a tuning choice (KernelConfig.tile_w)
beside conv_kernel.py's tilings, which tuning.py times on every layer this kernel runs.

PERSISTENT runs a few programs per SM, each looping over tiles, as pointwise_kernel.py's form: with
one program per tile an SM waits while a tile's pipeline fills before its first MMA and while its
epilogue runs after the last, a share of the tile's time that grows as its reduction shortens. A
tuning choice (tuning.py), like the pointwise kernel's, so no layer can get slower: on one H200 it
took 7 of its 16 layers at batch 256 (in stages 2-4) and 12 at batches 1 and 8; stage 1's 3x3
layers kept one program a tile (docs/performance.md).

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8.epilogue import epilogue, to_e4m3
from mlperf_harness.engines.torch_fp8.tile_order import tile_origin


@triton.jit  # type: ignore[untyped-decorator]
def _tile(  # type: ignore[no-untyped-def]
    tile,
    x_desc,
    w_desc,
    alpha_ptr,
    bias_ptr,
    res_desc,
    y16_desc,
    y8_desc,
    res_scale,
    out8_scale,
    N,
    P,
    Q,
    C,
    K,
    pad_h,
    pad_w,
    R: tl.constexpr,
    S: tl.constexpr,
    HAS_RES: tl.constexpr,
    RES_E4M3: tl.constexpr,
    RELU: tl.constexpr,
    STORE16: tl.constexpr,
    STORE8: tl.constexpr,
    BH: tl.constexpr,
    BW: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """One output tile: the reduction over the taps and input channels, then the epilogue, stored."""
    BLOCK_M: tl.constexpr = BH * BW
    blocks_h = tl.cdiv(P, BH)
    blocks_w = tl.cdiv(Q, BW)
    per_image = blocks_h * blocks_w
    row, column = tile_origin(tile, N * per_image * BLOCK_M, K, BLOCK_M, BLOCK_N, GROUP_M)
    block = row // BLOCK_M
    image = block // per_image
    p0 = (block % per_image) // blocks_w * BH
    q0 = (block % per_image) % blocks_w * BW
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in tl.range(0, R * S * C, BLOCK_K):
        tap = kk // C  # a block never spans two taps: BLOCK_K divides C
        a = x_desc.load([image, p0 + tap // S - pad_h, q0 + tap % S - pad_w, kk - tap * C])
        b = w_desc.load([column, kk])
        acc = tl.dot(a.reshape(BLOCK_M, BLOCK_K), b.T, acc)
    res = None
    if HAS_RES:
        res = res_desc.load([image, p0, q0, column]).reshape(BLOCK_M, BLOCK_N)
    y = epilogue(
        acc, res, column, alpha_ptr, bias_ptr, res_scale, K, HAS_RES, RES_E4M3, RELU, BLOCK_N
    )
    if STORE16:
        y16_desc.store([image, p0, q0, column], y.to(tl.float16).reshape(1, BH, BW, BLOCK_N))
    if STORE8:
        y8_desc.store([image, p0, q0, column], to_e4m3(y, out8_scale).reshape(1, BH, BW, BLOCK_N))


# The argument a batch size changes, not specialised on (conv_kernel.py's BATCH_ARGUMENTS).
BATCH_ARGUMENTS = ("N",)


@triton.jit(do_not_specialize=BATCH_ARGUMENTS)  # type: ignore[untyped-decorator]
def spatial_fp8_kernel(  # type: ignore[no-untyped-def]
    x_desc,  # e4m3 [N, H, W, C], blocks [1, BH, BW, BLOCK_K]
    w_desc,  # e4m3 [K, R*S*C], blocks [BLOCK_N, BLOCK_K]
    alpha_ptr,  # fp32 [K]
    bias_ptr,  # fp32 [K]
    res_desc,  # e4m3 (RES_E4M3) or fp16 [N, P, Q, K], blocks [1, BH, BW, BLOCK_N] (HAS_RES)
    y16_desc,  # fp16 [N, P, Q, K] (unused without STORE16)
    y8_desc,  # e4m3 [N, P, Q, K] (unused without STORE8)
    res_scale,
    out8_scale,
    N,
    P,
    Q,
    C,
    K,
    pad_h,
    pad_w,
    R: tl.constexpr,
    S: tl.constexpr,
    HAS_RES: tl.constexpr,
    RES_E4M3: tl.constexpr,
    RELU: tl.constexpr,
    STORE16: tl.constexpr,
    STORE8: tl.constexpr,
    BH: tl.constexpr,
    BW: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PERSISTENT: tl.constexpr,  # each program loops over every tl.num_programs(0)-th tile
):
    if PERSISTENT:
        # Flattened, so the compiler issues the next tile's first loads during this one's epilogue
        # (as pointwise_kernel.py's persistent form; the module's docstring).
        tiles = N * tl.cdiv(P, BH) * tl.cdiv(Q, BW) * tl.cdiv(K, BLOCK_N)
        for tile in tl.range(tl.program_id(0), tiles, tl.num_programs(0), flatten=True):
            _tile(
                tile,
                x_desc,
                w_desc,
                alpha_ptr,
                bias_ptr,
                res_desc,
                y16_desc,
                y8_desc,
                res_scale,
                out8_scale,
                N,
                P,
                Q,
                C,
                K,
                pad_h,
                pad_w,
                R,
                S,
                HAS_RES,
                RES_E4M3,
                RELU,
                STORE16,
                STORE8,
                BH,
                BW,
                BLOCK_N,
                BLOCK_K,
                GROUP_M,
            )
    else:
        _tile(
            tl.program_id(0),
            x_desc,
            w_desc,
            alpha_ptr,
            bias_ptr,
            res_desc,
            y16_desc,
            y8_desc,
            res_scale,
            out8_scale,
            N,
            P,
            Q,
            C,
            K,
            pad_h,
            pad_w,
            R,
            S,
            HAS_RES,
            RES_E4M3,
            RELU,
            STORE16,
            STORE8,
            BH,
            BW,
            BLOCK_N,
            BLOCK_K,
            GROUP_M,
        )


def grid_size(
    n: int, p: int, q: int, k: int, bh: int, bw: int, block_n: int, programs: int = 0
) -> int:
    """One program per tile (BH x BW output pixels of one image, BLOCK_N channels), or at most
    `programs` (PERSISTENT)."""
    tiles = int(n * triton.cdiv(p, bh) * triton.cdiv(q, bw) * triton.cdiv(k, block_n))
    return min(tiles, programs) if programs else tiles
