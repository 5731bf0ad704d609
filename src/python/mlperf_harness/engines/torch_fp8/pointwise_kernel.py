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

PERSISTENT runs a few programs per SM, each looping over tiles:
the next tile's loads are issued while the last one's epilogue reads the residual and its results
are stored, where one program per tile left each SM idle between a tile's loop and its epilogue
(the expansions make one to four reduction steps a tile).

Descriptors take e4m3 tensors as such (ops.py views the uint8 bits as float8_e4m3fn for them): the
loaded tiles then go to the tensor cores from shared memory with no conversion between. A_FP16
reads an fp16 input instead (a layer whose producer stays fp16: RetinaNet's 1x1s after ResNeXt's
grouped 3x3s) and quantizes each tile in registers as conv_kernel.py's A_FP16 does, so such layers
get a TMA form too (the pointer kernel's ran them at 180-410 TFLOPS on an H200, slower than
cuDNN's fp16 convolutions: docs/retinanet.md).

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
    in_scale,
    M,
    C,
    K,
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
    PREFETCH: tl.constexpr,
):
    """One output tile: the reduction over C, then the epilogue, stored."""
    row, column = tile_origin(tile, M, K, BLOCK_M, BLOCK_N, GROUP_M)
    res = None
    if HAS_RES and PREFETCH:
        res = res_desc.load([row, column])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in tl.range(0, C, BLOCK_K):
        a = x_desc.load([row, kk])
        if A_FP16:
            a = to_e4m3(a.to(tl.float32), in_scale)
        b = w_desc.load([column, kk])
        acc = tl.dot(a, b.T, acc)
    if HAS_RES and not PREFETCH:
        res = res_desc.load([row, column])
    y = epilogue(
        acc, res, column, alpha_ptr, bias_ptr, res_scale, K, HAS_RES, RES_E4M3, RELU, BLOCK_N
    )
    # Rows and columns past M and K are outside the descriptors' shapes: TMA does not write them.
    if STORE16:
        y16_desc.store([row, column], y.to(tl.float16))
    if STORE8:
        y8_desc.store([row, column], to_e4m3(y, out8_scale))


# The argument a batch size changes, not specialised on (conv_kernel.py's BATCH_ARGUMENTS).
BATCH_ARGUMENTS = ("M",)


@triton.jit(do_not_specialize=BATCH_ARGUMENTS)  # type: ignore[untyped-decorator]
def pointwise_fp8_kernel(  # type: ignore[no-untyped-def]
    x_desc,  # e4m3 [M, C] (fp16 with A_FP16), blocks [BLOCK_M, BLOCK_K]
    w_desc,  # e4m3 [K, C], blocks [BLOCK_N, BLOCK_K]
    alpha_ptr,  # fp32 [K]
    bias_ptr,  # fp32 [K]
    res_desc,  # e4m3 (RES_E4M3) or fp16 [M, K], blocks [BLOCK_M, BLOCK_N] (unused without HAS_RES)
    y16_desc,  # fp16 [M, K] (unused without STORE16)
    y8_desc,  # e4m3 [M, K] (unused without STORE8)
    res_scale,  # RES_E4M3: the residual's e4m3 scale
    out8_scale,
    in_scale,  # A_FP16: 1 / the input's e4m3 scale
    M,
    C,
    K,
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
    PREFETCH: tl.constexpr,  # the residual's tile requested before the reduction loop
    PERSISTENT: tl.constexpr,  # each program loops over every tl.num_programs(0)-th tile
):
    if PERSISTENT:
        # The loop nest is flattened, so the compiler pipelines the next tile's loads across this
        # one's epilogue (the module's docstring).
        tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(K, BLOCK_N)
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
                in_scale,
                M,
                C,
                K,
                A_FP16,
                HAS_RES,
                RES_E4M3,
                RELU,
                STORE16,
                STORE8,
                BLOCK_M,
                BLOCK_N,
                BLOCK_K,
                GROUP_M,
                False,  # the loop over tiles is what hides the epilogue here
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
            in_scale,
            M,
            C,
            K,
            A_FP16,
            HAS_RES,
            RES_E4M3,
            RELU,
            STORE16,
            STORE8,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            GROUP_M,
            PREFETCH,
        )


def grid_size(m: int, k: int, block_m: int, block_n: int, programs: int = 0) -> int:
    """Programs to launch: one per tile, or at most `programs` (PERSISTENT)."""
    tiles = int(triton.cdiv(m, block_m) * triton.cdiv(k, block_n))
    return min(tiles, programs) if programs else tiles
