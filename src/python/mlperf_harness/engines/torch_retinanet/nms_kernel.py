"""RetinaNet's per-class NMS as two Triton kernels: greedy NMS exactly, box by box, in two passes.

1. `overlap_bits_kernel`: for candidates sorted best first, bit t of word w of row i is set where
   candidate j = 64 w + t comes after i (j > i), has i's class and overlaps it by IoU above the
   threshold: "i, if kept, removes j". Only the upper triangle is ever set; a program takes a block
   of rows and a block of words of one image, and one wholly below the diagonal returns at once.
2. `greedy_scan_kernel`: one program per image walks the candidates in score order, 64 at a time
   (one word): a candidate is kept where it is valid and no kept better candidate removed it; the
   block's own word is resolved serially (64 scalar steps on one 64-bit register), then the kept
   rows' words are OR-ed into the image's `removed` bits for the blocks after it. That is greedy
   NMS itself (torchvision's, MLCommons' reference), not a fixed point that may not settle.

The IoU is the host's arithmetic, rounded as it rounds (float32, each product and the quotient
rounded on its own): Triton lets ptxas fuse a product into the sum after it (an FMA, rounded
once), which would move an IoU at the threshold by an ulp; on the GPU (ROUNDED_MUL) the products
are `mul.rn.f32`, which ptxas never fuses, and the quotient is `div.rn` (Triton's `/` is an
approximate division). Under the interpreter numpy rounds every operation on its own.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

WORD_BITS = 64  # candidates per int64 word of the bit matrix
BLOCK_ROWS, BLOCK_WORDS, BITS_WARPS = 16, 4, 4  # overlap_bits_kernel's tile: rows x words x 64
SCAN_WARPS = 4


def words_for(candidates: int) -> int:
    return -(-candidates // WORD_BITS)


@triton.jit
def _or(a, b):  # type: ignore[no-untyped-def]
    return a | b


@triton.jit  # type: ignore[untyped-decorator]
def _mul(a, b, ROUNDED_MUL: tl.constexpr):  # type: ignore[no-untyped-def]
    """a * b rounded on its own (never fused into an add after it)."""
    if ROUNDED_MUL:
        return tl.inline_asm_elementwise(
            "mul.rn.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.float32, is_pure=True, pack=1
        )
    else:
        return a * b


@triton.jit  # type: ignore[untyped-decorator]
def overlap_bits_kernel(  # type: ignore[no-untyped-def]
    boxes_ptr,  # fp32 [N, K, 4] (x1, y1, x2, y2), sorted best first
    labels_ptr,  # int64 [N, K]
    bits_ptr,  # int64 [N, K, W]: written where the word holds any j > i (the rest never read)
    K,
    W,
    threshold,
    ROUNDED_MUL: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_WORDS: tl.constexpr,
):
    image = tl.program_id(0)
    # A tile whose last candidate comes before its first row holds no bit the scan reads (the
    # lower triangle: about half the grid): its program ends before any IoU.
    if (tl.program_id(2) + 1) * BLOCK_WORDS * 64 <= tl.program_id(1) * BLOCK_ROWS:
        return
    rows = tl.program_id(1) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    words = tl.program_id(2) * BLOCK_WORDS + tl.arange(0, BLOCK_WORDS)
    t = tl.arange(0, 64)
    row_ok = rows < K
    i_box = boxes_ptr + (image * K + rows) * 4
    ix1 = tl.load(i_box, mask=row_ok, other=0.0)[:, None, None]
    iy1 = tl.load(i_box + 1, mask=row_ok, other=0.0)[:, None, None]
    ix2 = tl.load(i_box + 2, mask=row_ok, other=0.0)[:, None, None]
    iy2 = tl.load(i_box + 3, mask=row_ok, other=0.0)[:, None, None]
    i_label = tl.load(labels_ptr + image * K + rows, mask=row_ok, other=-1)[:, None, None]
    cols = words[:, None] * 64 + t[None, :]  # [BLOCK_WORDS, 64]: candidate j of each bit
    col_ok = cols < K
    j_box = boxes_ptr + (image * K + cols) * 4
    jx1 = tl.load(j_box, mask=col_ok, other=0.0)[None, :, :]
    jy1 = tl.load(j_box + 1, mask=col_ok, other=0.0)[None, :, :]
    jx2 = tl.load(j_box + 2, mask=col_ok, other=0.0)[None, :, :]
    jy2 = tl.load(j_box + 3, mask=col_ok, other=0.0)[None, :, :]
    j_label = tl.load(labels_ptr + image * K + cols, mask=col_ok, other=-2)[None, :, :]
    # The host's order: widths and heights of the intersection clamped at 0, the product, the areas'
    # sum less the intersection, the quotient.
    width = tl.maximum(tl.minimum(ix2, jx2) - tl.maximum(ix1, jx1), 0.0)
    height = tl.maximum(tl.minimum(iy2, jy2) - tl.maximum(iy1, jy1), 0.0)
    inter = _mul(width, height, ROUNDED_MUL)
    i_area = _mul(ix2 - ix1, iy2 - iy1, ROUNDED_MUL)
    j_area = _mul(jx2 - jx1, jy2 - jy1, ROUNDED_MUL)
    iou = tl.math.div_rn(inter, (j_area + i_area) - inter)  # NaN (0 / 0) removes nothing
    later = cols[None, :, :] > rows[:, None, None]
    hit = (iou > threshold) & (i_label == j_label) & later & col_ok[None, :, :]
    one = tl.full((1, 1, 64), 1, tl.int64)
    # Distinct bits: their sum is their OR (the top bit's wraps to the sign, as an OR would set it).
    word = tl.sum(tl.where(hit, one << t[None, None, :].to(tl.int64), 0), 2)
    # A word wholly before its row is never read by the scan: not written (a row's own word is,
    # even where it holds no later candidate).
    needed = row_ok[:, None] & (words[None, :] < W) & (words[None, :] * 64 + 63 >= rows[:, None])
    tl.store(bits_ptr + (image * K + rows[:, None]) * W + words[None, :], word, mask=needed)


@triton.jit  # type: ignore[untyped-decorator]
def greedy_scan_kernel(  # type: ignore[no-untyped-def]
    bits_ptr,  # int64 [N, K, W] (overlap_bits_kernel)
    valid_ptr,  # uint8 [N, K]: 1 where the candidate is above the score threshold
    keep_ptr,  # uint8 [N, K] out: 1 where greedy NMS keeps the candidate
    K,
    W,
    WORDS: tl.constexpr,  # W rounded up to a power of two
):
    image = tl.program_id(0)
    words = tl.arange(0, WORDS)
    t = tl.arange(0, 64)
    removed = tl.zeros((WORDS,), dtype=tl.int64)
    one = tl.full((64,), 1, tl.int64)
    for block in range(0, W):
        base = block * 64
        rows = base + t
        # This block's word of `removed` (final: every better block has been scanned), with the
        # invalid candidates' bits set too (those past K among them): distinct bits, summed.
        valid = tl.load(valid_ptr + image * K + rows, mask=rows < K, other=0)
        invalid = tl.sum(tl.where(valid == 0, one << t.to(tl.int64), 0), 0)
        gone = tl.sum(tl.where(words == block, removed, 0), 0) | invalid
        kept = gone * 0
        for bit in tl.static_range(64):
            i = base + bit
            own = tl.load(bits_ptr + (image * K + i) * W + block, mask=i < K, other=0)
            alive = ((gone >> bit) & 1) == 0
            gone = tl.where(alive, gone | own, gone)
            kept = kept | (alive.to(tl.int64) << bit)
        row_kept = ((kept >> t.to(tl.int64)) & 1) != 0
        tl.store(keep_ptr + image * K + rows, row_kept.to(tl.uint8), mask=rows < K)
        later = (words > block) & (words < W)
        tile = tl.load(
            bits_ptr + (image * K + rows[:, None]) * W + words[None, :],
            mask=row_kept[:, None] & (rows[:, None] < K) & later[None, :],
            other=0,
        )
        removed = removed | tl.reduce(tile, 0, _or)


def greedy_keep(
    boxes: Any,
    labels: Any,
    valid: Any,
    threshold: float,
    wrap: Callable[[Any], Any] = lambda k: k,
    tile: tuple[int, int] = (BLOCK_ROWS, BLOCK_WORDS),
) -> Any:
    """uint8 [N, K]: greedy per-class NMS of each image's candidates (sorted best first: boxes fp32
    [N, K, 4], labels int64 [N, K], valid uint8 [N, K]). `wrap`: torch.library.wrap_triton inside
    the engine's operator (nms_op.py), none when called directly (tests). `tile`: the overlap
    kernel's rows and words a program (larger under the interpreter, which runs programs one by
    one: fewer of them)."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    batch, k = labels.shape
    w = words_for(k)
    bits = torch.empty((batch, k, w), dtype=torch.int64, device=labels.device)
    keep = torch.empty((batch, k), dtype=torch.uint8, device=labels.device)
    block_rows, block_words = tile
    grid = (batch, triton.cdiv(k, block_rows), triton.cdiv(w, block_words))
    wrap(overlap_bits_kernel)[grid](
        boxes,
        labels,
        bits,
        k,
        w,
        threshold,
        ROUNDED_MUL=boxes.is_cuda,
        BLOCK_ROWS=block_rows,
        BLOCK_WORDS=block_words,
        num_warps=BITS_WARPS,
    )
    wrap(greedy_scan_kernel)[(batch,)](
        bits, valid, keep, k, w, WORDS=triton.next_power_of_2(w), num_warps=SCAN_WARPS
    )
    return keep
