"""GPT-J's decode-step attention over the slot cache (`cache_layout`) as ONE Triton kernel: per slot
and head, the slot's beam queries against its prompt's keys and values (its real length, read once
for all its beams) and against the generated columns each beam's ancestry makes visible, in one
online softmax accumulated in float32. It computes what attention.py's two parts and their merge
compute (prompt_attention_dense + generated_attention + merge), with no merge pass and no float32
score tensors in memory.

Why: FlashAttention's varlen kernel gives a slot's 4 beam queries a 128-row query tile (32x the
tensor-core work they need), and the generated part is several float32 passes over [slots, heads,
beams, columns] tensors. Here a program's query tile is its slot's beams padded to 16 rows (the
smallest `tl.dot` takes), and the generated columns are read up to the slot's step only
(`generated_used`: (step + 1) x beams), not all of the region.

A program is (slot, head, split). When slots x heads programs are too few to fill the GPU
(`split_count`, decided by shape: a CUDA graph's launch grid is fixed), each slot's key blocks
(its prompt's, then its generated region's) are divided among `splits` programs that write
unnormalised partial results with their running maximum and sum, and a second small kernel
combines them (flash-decoding). The grid depends only on (slots, heads, splits); prompt lengths and
steps are read on the device, so the launch fits a captured graph (no host sync).

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module; the
engine imports it only where Triton is installed and the device is CUDA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines import split_k

LOG2E = 1.4426950408889634
MIN_ROWS = 16  # the smallest M of tl.dot: a slot's beams are padded to it
MAX_SPLITS = 16
# Programs wanted per multiprocessor before a slot's keys are split: enough waves that the last
# one's idle SMs cost little (a program is one slot's keys for one head: 14 blocks of 64 at GPT-J's
# mean prompt, and up to 9 of generated columns). Both figures are judgement, not measured: the
# GPU's timing of the tilings says how well they were chosen.
PROGRAMS_PER_SM = 4
MIN_BLOCKS_PER_SPLIT = 4  # fewer blocks a split: its partial result's write and combine dominate


@dataclass(frozen=True)
class Tiles:
    """The kernel's tiling: keys per block, warps, software-pipeline stages."""

    block_n: int
    warps: int
    stages: int


# The candidates the engine times (engine.py), by name: tilings that differ in what they keep in
# flight per SM. At GPT-J's 256-dim heads in fp16 a block of 64 keys is 32 KiB of keys and 32 KiB
# of values. Compiled for sm_90 (Triton 3.7.1 on a CPU; none has run on a GPU): "triton" takes
# 74 KiB of shared memory and 196 registers a thread (two programs an SM, by registers);
# "triton-64x3w8" 138 KiB (one an SM, two blocks in flight) and 128 registers; "triton-32x3w8"
# 73 KiB and 128 (two an SM). None spills. The query tile's 16 rows are too few for Hopper's wgmma:
# the products are mma.sync, no limit at 4 beams a slot (the bytes are).
TILES = {
    "triton": Tiles(block_n=64, warps=4, stages=2),
    "triton-64x3w8": Tiles(block_n=64, warps=8, stages=3),
    "triton-32x3w8": Tiles(block_n=32, warps=8, stages=3),
}


@triton.jit  # type: ignore[untyped-decorator]
def _attend(q, k, v, seen, m_i, l_i, acc, qk_scale, PRECISION: tl.constexpr):  # type: ignore[no-untyped-def]
    """One block of keys into the running (max, sum, output) of the online softmax, in base 2
    (qk_scale holds log2(e)); `seen` masks keys out per row. The maximum starts finite (-1e30), so
    a row that sees no key in a block (or none at all) keeps weight 0 and never makes a NaN."""
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
    s = tl.where(seen, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
    return m_new, l_i, acc


@triton.jit  # type: ignore[untyped-decorator]
def decode_attention_kernel(  # type: ignore[no-untyped-def]
    q_ptr,  # [slots * BEAMS, HEADS, HEAD_DIM]
    prompt_k_ptr,  # [slots, max_prompt, HEADS, HEAD_DIM] (strides: prompt_slot, prompt_token, HEAD_DIM, 1)
    prompt_v_ptr,
    lengths_ptr,  # int32 [slots]: each slot's prompt tokens (>= 1)
    gen_k_ptr,  # [slots, HEADS, columns, HEAD_DIM] (strides: gen_slot, gen_head, HEAD_DIM, 1)
    gen_v_ptr,
    visible_ptr,  # uint8 [slots, BEAMS, columns] (strides: visible_slot, visible_beam, 1)
    used_ptr,  # int32 [slots]: generated columns to read (every visible one is below)
    out_ptr,  # [slots * BEAMS, HEADS, HEAD_DIM] (SPLITS == 1)
    part_o_ptr,  # float32 [slots, HEADS, SPLITS, BEAMS, HEAD_DIM] (SPLITS > 1)
    part_m_ptr,  # float32 [slots, HEADS, SPLITS, BEAMS]: the running maximum, base 2
    part_l_ptr,  # float32 [slots, HEADS, SPLITS, BEAMS]: the running sum
    qk_scale,  # head_dim ** -0.5 * log2(e)
    prompt_slot,
    prompt_token,
    gen_slot,
    gen_head,
    visible_slot,
    visible_beam,
    HEADS: tl.constexpr,
    BEAMS: tl.constexpr,
    ROWS: tl.constexpr,  # BEAMS padded to a power of two >= 16
    HEAD_DIM: tl.constexpr,
    DIMS: tl.constexpr,  # HEAD_DIM padded to a power of two
    BLOCK_N: tl.constexpr,
    SPLITS: tl.constexpr,
    PRECISION: tl.constexpr,  # "ieee" for float32 (no TF32), the default otherwise
):
    slot = tl.program_id(0)
    head = tl.program_id(1)
    split = tl.program_id(2)
    rows = tl.arange(0, ROWS)
    dims = tl.arange(0, DIMS)
    dim_ok = dims < HEAD_DIM
    keys = tl.arange(0, BLOCK_N)
    beam_ok = rows < BEAMS
    row_dims = beam_ok[:, None] & dim_ok[None, :]
    q_rows = (slot * BEAMS + rows) * HEADS + head
    q = tl.load(q_ptr + q_rows[:, None] * HEAD_DIM + dims[None, :], mask=row_dims, other=0.0)
    length = tl.load(lengths_ptr + slot)
    used = tl.load(used_ptr + slot)
    prompt_blocks = tl.cdiv(length, BLOCK_N)
    blocks = prompt_blocks + tl.cdiv(used, BLOCK_N)
    first = split * blocks // SPLITS
    last = (split + 1) * blocks // SPLITS

    m_i = tl.full([ROWS], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([ROWS], dtype=tl.float32)
    acc = tl.zeros([ROWS, DIMS], dtype=tl.float32)

    # The prompt: shared by the slot's beams, its keys read once for all of them.
    slot64 = slot.to(tl.int64)
    prompt_k = prompt_k_ptr + slot64 * prompt_slot + head * HEAD_DIM
    prompt_v = prompt_v_ptr + slot64 * prompt_slot + head * HEAD_DIM
    for block in range(first, tl.minimum(last, prompt_blocks)):
        token = block * BLOCK_N + keys
        ok = token < length
        offsets = token[:, None] * prompt_token + dims[None, :]
        key_dims = ok[:, None] & dim_ok[None, :]
        k = tl.load(prompt_k + offsets, mask=key_dims, other=0.0)
        v = tl.load(prompt_v + offsets, mask=key_dims, other=0.0)
        seen = beam_ok[:, None] & ok[None, :]
        m_i, l_i, acc = _attend(q, k, v, seen, m_i, l_i, acc, qk_scale, PRECISION)

    # The generated columns: each beam sees those its ancestry names.
    gen_k = gen_k_ptr + slot64 * gen_slot + head * gen_head
    gen_v = gen_v_ptr + slot64 * gen_slot + head * gen_head
    visible = visible_ptr + slot * visible_slot + rows[:, None] * visible_beam
    for block in range(tl.maximum(first, prompt_blocks), last):
        column = (block - prompt_blocks) * BLOCK_N + keys
        ok = column < used
        offsets = column[:, None] * HEAD_DIM + dims[None, :]
        key_dims = ok[:, None] & dim_ok[None, :]
        k = tl.load(gen_k + offsets, mask=key_dims, other=0.0)
        v = tl.load(gen_v + offsets, mask=key_dims, other=0.0)
        shown = tl.load(visible + column[None, :], mask=beam_ok[:, None] & ok[None, :], other=0)
        m_i, l_i, acc = _attend(q, k, v, shown != 0, m_i, l_i, acc, qk_scale, PRECISION)

    if SPLITS == 1:
        out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        tl.store(
            out_ptr + q_rows[:, None] * HEAD_DIM + dims[None, :],
            out.to(out_ptr.dtype.element_ty),
            mask=row_dims,
        )
    else:
        part = ((slot * HEADS + head) * SPLITS + split) * BEAMS + rows
        tl.store(part_o_ptr + part[:, None] * HEAD_DIM + dims[None, :], acc, mask=row_dims)
        tl.store(part_m_ptr + part, m_i, mask=beam_ok)
        tl.store(part_l_ptr + part, l_i, mask=beam_ok)


@triton.jit  # type: ignore[untyped-decorator]
def combine_splits_kernel(  # type: ignore[no-untyped-def]
    part_o_ptr,
    part_m_ptr,
    part_l_ptr,
    out_ptr,
    HEADS: tl.constexpr,
    BEAMS: tl.constexpr,
    ROWS: tl.constexpr,  # BEAMS padded to a power of two
    HEAD_DIM: tl.constexpr,
    DIMS: tl.constexpr,
    SPLITS: tl.constexpr,
):
    """A (slot, head)'s split partial results merged by their maxima and sums, normalised."""
    slot = tl.program_id(0)
    head = tl.program_id(1)
    rows = tl.arange(0, ROWS)
    dims = tl.arange(0, DIMS)
    dim_ok = dims < HEAD_DIM
    beam_ok = rows < BEAMS
    row_dims = beam_ok[:, None] & dim_ok[None, :]
    m = tl.full([ROWS], -1.0e30, dtype=tl.float32)
    total = tl.zeros([ROWS], dtype=tl.float32)
    out = tl.zeros([ROWS, DIMS], dtype=tl.float32)
    for split in tl.static_range(SPLITS):
        part = ((slot * HEADS + head) * SPLITS + split) * BEAMS + rows
        m_j = tl.load(part_m_ptr + part, mask=beam_ok, other=-1.0e30)
        l_j = tl.load(part_l_ptr + part, mask=beam_ok, other=0.0)
        o_j = tl.load(
            part_o_ptr + part[:, None] * HEAD_DIM + dims[None, :], mask=row_dims, other=0.0
        )
        m_new = tl.maximum(m, m_j)
        old, new = tl.exp2(m - m_new), tl.exp2(m_j - m_new)
        total = total * old + l_j * new
        out = out * old[:, None] + o_j * new[:, None]
        m = m_new
    out = out / tl.where(total > 0, total, 1.0)[:, None]
    q_rows = (slot * BEAMS + rows) * HEADS + head
    tl.store(
        out_ptr + q_rows[:, None] * HEAD_DIM + dims[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=row_dims,
    )


def split_count(slots: int, heads: int, blocks: int, multiprocessors: int) -> int:
    """How many programs share each (slot, head)'s keys (split_k.split_count): 1 when slots x
    heads programs already make PROGRAMS_PER_SM waves; else enough to, each split keeping
    MIN_BLOCKS_PER_SPLIT of the `blocks` a slot can hold, at most MAX_SPLITS."""
    return split_k.split_count(
        slots * heads,
        PROGRAMS_PER_SM * multiprocessors,
        blocks,
        MIN_BLOCKS_PER_SPLIT,
        MAX_SPLITS,
    )


def key_blocks(max_prompt: int, columns: int, tiles: Tiles) -> int:
    """The most key blocks a slot has: its whole prompt region and generated region."""
    return -(-max_prompt // tiles.block_n) + -(-columns // tiles.block_n)


def decode_attention(
    torch: Any,
    q: Any,
    prompt_k: Any,
    prompt_v: Any,
    prompt_lengths: Any,
    gen_k: Any,
    gen_v: Any,
    visible: Any,
    generated_used: Any,
    splits: int,
    tiles: Tiles,
) -> Any:
    """q [slots * beams, heads, head_dim] contiguous; prompt_k/v [slots, max_prompt, heads,
    head_dim] (their last two dims contiguous, a slice of the cache); prompt_lengths int32 [slots]
    (each >= 1); gen_k/v [slots, heads, columns, head_dim] (last two contiguous); visible bool or
    uint8 [slots, beams, columns]; generated_used int32 [slots], every visible column below it
    (at most columns). Returns the attention over prompt and visible generated keys,
    [slots * beams, heads, head_dim] in q's dtype: attention.py's two parts merged."""
    slots, _, heads, head_dim = prompt_k.shape
    beams = q.shape[0] // slots
    if visible.dtype == torch.bool:
        visible = visible.view(torch.uint8)
    for t in (prompt_k, prompt_v, gen_k, gen_v):
        if t.stride(-1) != 1 or t.stride(-2) != head_dim:
            raise ValueError("decode_attention: the cache's heads and dims must be contiguous")
    if prompt_k.stride() != prompt_v.stride() or gen_k.stride() != gen_v.stride():
        raise ValueError("decode_attention: keys and values must share their layout")
    if visible.stride(-1) != 1 or not q.is_contiguous():
        raise ValueError("decode_attention: q and the visibility mask must be contiguous")
    dims = max(MIN_ROWS, triton.next_power_of_2(head_dim))
    out = torch.empty_like(q)
    if splits > 1:
        part_o = torch.empty(
            (slots, heads, splits, beams, head_dim), device=q.device, dtype=torch.float32
        )
        part_m = torch.empty((slots, heads, splits, beams), device=q.device, dtype=torch.float32)
        part_l = torch.empty_like(part_m)
    else:  # unused: the kernel writes its output itself
        part_o = part_m = part_l = out
    decode_attention_kernel[(slots, heads, splits)](
        q,
        prompt_k,
        prompt_v,
        prompt_lengths,
        gen_k,
        gen_v,
        visible,
        generated_used,
        out,
        part_o,
        part_m,
        part_l,
        head_dim**-0.5 * LOG2E,
        prompt_k.stride(0),
        prompt_k.stride(1),
        gen_k.stride(0),
        gen_k.stride(1),
        visible.stride(0),
        visible.stride(1),
        HEADS=heads,
        BEAMS=beams,
        ROWS=max(MIN_ROWS, triton.next_power_of_2(beams)),
        HEAD_DIM=head_dim,
        DIMS=dims,
        BLOCK_N=tiles.block_n,
        SPLITS=splits,
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=tiles.warps,
        num_stages=tiles.stages,
    )
    if splits > 1:
        combine_splits_kernel[(slots, heads)](
            part_o,
            part_m,
            part_l,
            out,
            HEADS=heads,
            BEAMS=beams,
            ROWS=triton.next_power_of_2(beams),
            HEAD_DIM=head_dim,
            DIMS=dims,
            SPLITS=splits,
            num_warps=4,
        )
    return out
