"""The FP8 engine's stem as one Triton kernel: ResNet's first convolution (fp16, stride 2), its bias,
the relu, the 3x3 max pool of stride 2 (padding 0 or 1 a side) and the e4m3 store
(plan.Fp8StemLayer), so the
convolution's fp16 output (411 MB a batch of 256 at 224 x 224) is never written nor read again:
cuDNN's convolution then pool_kernel.py moved it twice (0.40 + 0.19 ms on an H100).

A tile is TILE_P x TILE_Q pooled pixels of one image (7 x 8 divides ResNet's 56 x 56). Their windows
cover (2 TILE_P + 1) x (2 TILE_Q + 1) convolution pixels (15 x 17 = 255), the rows of an implicit
GEMM of BLOCK_M rows (256): row m is the pixel (m // CONV_W, m % CONV_W) of the tile's window
block, its first pixel the first window's first (one above and left of the image's first pixel
with the pool's padding of 1, PyTorch's; the image's first with none, TensorFlow's SAME).

The reduction runs over the R filter rows, one block each: TAPS consecutive input columns x C
channels, a contiguous run of the NHWC input (8 x 4 fp16 = 64 bytes for a 7x7 filter over the 4
channels the input pass writes). The run starts LEAD columns early, with zero weights there and past
the filter's S taps, so that it starts on an even column. With an even image width a pair of
columns is then wholly inside or wholly outside the image, so with PAIRS the padding's masks are
constant over 16 bytes and the operand moves in 16-byte copies; Triton issues those as
cp.async.cg, which reads at L2, though a tile reads its input about ten times over (35 x 40 pixels,
11 KB, for 7 reduction steps of 16 KB). Without PAIRS (an odd width, or StemConfig.wide 0) the
masks cover one column and the copies are 8 bytes, cp.async.ca, through L1, twice as many: on an
H100 that was 13-30% slower at batch 256, so tuning tries the wide form only. The dropped FP8 stem
(docs/performance.md) read 4-byte words and took 414 us; this one took 581-589 us at batch 256
against 589-595 for cuDNN's convolution and the pool kernel on H100s. Neither the traffic the
fusion saves bounds it, nor L2's (a form with its loads through L1 was no faster), nor the number
of dependent reduction steps (two filter rows a step were slower): tuning.py.
fp16 operands, fp32 accumulation: the stem stays in fp16 (pixels quantized to e4m3 cost accuracy
there).

The epilogue adds the bias and rounds to fp16, as the fp16 graph's output held it, applies the relu,
and quantizes to e4m3. Quantizing before the pool is exact: x -> e4m3(x * scale) never decreases,
so the maximum of the quantized pixels is the quantized maximum; and e4m3 bits of values >= 0 order
as the values do, so the pool takes the maximum of the bits as bytes. Pixels outside the image (the
pool's padding) and the spare GEMM row are stored as 0: after the relu every pixel is >= 0, and a
window of a 3x3 pool of stride 2 padded by at most 1 always holds one pixel of the image, so 0
never wins where -inf would not.

Triton cannot move values between a tile's rows in registers, so the pool goes through memory: each
program stores its e4m3 tile (16 KB) in a scratch slot of its own, waits on a barrier, loads each
pooled pixel's 9 taps and stores their maximum, then waits again before the next tile overwrites the
slot. The program is persistent (a few per SM, each looping over tiles and reusing its slot), so the
slots stay in cache. The barrier orders a program's stores before its loads (PTX's memory model:
bar.sync orders memory as membar.cta does), and a program runs on one SM, so its loads go through
the one L1 its stores went through: plain loads see them (only different SMs' L1s are not
coherent).

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8.epilogue import to_e4m3

# What the kernel computes (constexprs: globals a jit function reads must be), the pattern plan.py
# fuses: the convolution's stride (an even input column starts every run: the docstring) and the
# max pool's window and stride (its padding, 0 or 1 before the first row and column, is an
# argument: TensorFlow's SAME pooling, as tf2onnx writes it, pads after the last ones only).
STRIDE = tl.constexpr(2)
POOL, POOL_STRIDE = tl.constexpr(3), tl.constexpr(2)


# The argument a batch size changes, not specialised on (conv_kernel.py's BATCH_ARGUMENTS).
BATCH_ARGUMENTS = ("N",)


@triton.jit(do_not_specialize=BATCH_ARGUMENTS)  # type: ignore[untyped-decorator]
def stem_pool_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # fp16 [N, H, W, C]
    w_ptr,  # fp16 [K, R, S, C]
    bias_ptr,  # fp32 [K] (fp16 values)
    scratch_ptr,  # uint8 [programs, BLOCK_M, K]: each program's e4m3 tile, for its pool
    y8_ptr,  # e4m3 bits [N, PO, QO, K]
    out8_scale,
    N,
    H,
    W,
    P,  # the convolution's output rows and columns
    Q,
    PO,  # the pool's
    QO,
    C: tl.constexpr,
    K: tl.constexpr,
    R: tl.constexpr,
    S: tl.constexpr,
    PAD_H: tl.constexpr,  # top and left padding of the convolution (constexpr: the loads'
    PAD_W: tl.constexpr,  # alignment is known at compile time)
    POOL_PAD_H: tl.constexpr,  # the pool's padding before the first row and column (0 or 1)
    POOL_PAD_W: tl.constexpr,
    PAIRS: tl.constexpr,  # masks by pairs of columns, 16-byte copies (W even; the docstring)
    TILE_P: tl.constexpr,
    TILE_Q: tl.constexpr,
    BLOCK_M: tl.constexpr,  # (2 TILE_P + 1) (2 TILE_Q + 1) rounded up to a power of two
    POOL_M: tl.constexpr,  # TILE_P TILE_Q rounded up to a power of two
    BLOCK_K: tl.constexpr,  # TAPS * C, TAPS a power of two >= S + PAD_W % 2
):
    CONV_H: tl.constexpr = POOL_STRIDE * TILE_P + 1  # 2 TILE_P + 1 rows of windows
    CONV_W: tl.constexpr = POOL_STRIDE * TILE_Q + 1
    LEAD: tl.constexpr = (
        PAD_W % 2
    )  # zero taps before the filter's first: runs start on even columns
    rows = tl.arange(0, BLOCK_M)
    conv_row = rows // CONV_W
    conv_col = rows % CONV_W
    offs_k = tl.arange(0, BLOCK_K)
    offs_n = tl.arange(0, K)
    tap = offs_k // C - LEAD  # each reduction element's filter column
    tap_ok = (tap >= 0) & (tap < S)
    # Each element's column as the masks see it: its pair's first with PAIRS (so they are constant
    # over 2 * C elements), else its own.
    MASKED: tl.constexpr = 2 if PAIRS else 1
    column = (offs_k // (MASKED * C)) * MASKED
    bias = tl.load(bias_ptr + offs_n)
    pooled = tl.arange(0, POOL_M)
    pool_i = pooled // TILE_Q
    pool_j = pooled % TILE_Q
    window = POOL_STRIDE * (pool_i * CONV_W + pool_j)  # the tile row of each window's first tap
    slot = scratch_ptr + tl.program_id(0) * (BLOCK_M * K)
    tiles_h = tl.cdiv(PO, TILE_P)
    tiles_w = tl.cdiv(QO, TILE_Q)
    per_image = tiles_h * tiles_w
    # One stage: nothing of one tile may be loaded ahead into the last one's barriers.
    for tile in tl.range(tl.program_id(0), N * per_image, tl.num_programs(0), num_stages=1):
        image = tile // per_image
        i0 = (tile % per_image) // tiles_w * TILE_P
        j0 = (tile % per_image) % tiles_w * TILE_Q
        p = POOL_STRIDE * i0 - POOL_PAD_H + conv_row
        q = POOL_STRIDE * j0 - POOL_PAD_W + conv_col
        h_first = STRIDE * p - PAD_H
        # Even (the docstring), and known so at compile time: grouped, the constant keeps the
        # factor 2 that `2 q - 3 - 1` would lose (8-byte copies then, not 16).
        w_first = STRIDE * q - (PAD_W + LEAD)
        columns = w_first[:, None] + column[None, :]
        col_ok = (columns >= 0) & (columns < W)
        acc = tl.zeros((BLOCK_M, K), dtype=tl.float32)
        for r in tl.range(R):
            h = h_first + r
            ok = col_ok & ((h >= 0) & (h < H))[:, None]
            a_rows = ((image * H + h) * W + w_first) * C
            a = tl.load(x_ptr + a_rows[:, None] + offs_k[None, :], mask=ok, other=0.0)
            b = tl.load(
                w_ptr + offs_n[None, :] * (R * S * C) + (r * S * C - LEAD * C + offs_k)[:, None],
                mask=tap_ok[:, None],
                other=0.0,
            )
            acc = tl.dot(a, b, acc)
        y = (acc + bias[None, :]).to(tl.float16).to(tl.float32)
        inside = (conv_row < CONV_H) & (p >= 0) & (p < P) & (q >= 0) & (q < Q)
        y = tl.where(inside[:, None] & (y > 0.0), y, 0.0)  # relu; the padding as 0 (docstring)
        y8 = to_e4m3(y, out8_scale).to(tl.uint8, bitcast=True)
        tl.store(slot + rows[:, None] * K + offs_n[None, :], y8)
        tl.debug_barrier()  # the tile is in the slot for every thread of the program
        in_tile = (pooled < TILE_P * TILE_Q)[:, None]
        best = tl.zeros((POOL_M, K), dtype=tl.uint8)
        for dr in tl.static_range(POOL):
            for dc in tl.static_range(POOL):
                taps = slot + (window + dr * CONV_W + dc)[:, None] * K + offs_n[None, :]
                best = tl.maximum(best, tl.load(taps, mask=in_tile, other=0))
        i = i0 + pool_i
        j = j0 + pool_j
        out = ((image * PO + i) * QO + j) * K
        out_ok = in_tile & ((i < PO) & (j < QO))[:, None]
        tl.store(y8_ptr + out[:, None] + offs_n[None, :], best, mask=out_ok)
        tl.debug_barrier()  # every tap is read before the next tile overwrites the slot


def block_m(tile_p: int, tile_q: int) -> int:
    """GEMM rows a tile needs: its pooled pixels' windows, (2 tile_p + 1) x (2 tile_q + 1)."""
    return int(triton.next_power_of_2((2 * tile_p + 1) * (2 * tile_q + 1)))


def pool_m(tile_p: int, tile_q: int) -> int:
    return int(triton.next_power_of_2(tile_p * tile_q))


def block_k(taps: int, pad_w: int, channels: int) -> int:
    """A filter row's reduction block: its taps and the LEAD zero one (the docstring), rounded up to
    a power of two, times the channels."""
    return int(triton.next_power_of_2(taps + pad_w % 2)) * channels


def tiles(n: int, po: int, qo: int, tile_p: int, tile_q: int) -> int:
    return int(n * triton.cdiv(po, tile_p) * triton.cdiv(qo, tile_q))
