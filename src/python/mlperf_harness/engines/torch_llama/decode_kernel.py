"""The torch Llama engine's decode attention as Triton kernels reading the KV cache where it lies
(options.py's attention "fp8kernel"): no converted copy of the keys, no gather. `packed` converted
each live row's FP8 keys and values to bf16 into a packed run and gave that to FlashAttention: on one
H200 at 173 slots the conversion copies took 23.8 ms a step and the gather 4.9 ms, against 9.1 ms
for FlashAttention itself (docs/llama2-70b.md). Here the e4m3 bytes are converted in registers
(compiled for sm_90: to fp16 two at a time, then to bf16, both exact).

`decode_kernel`: one program per (row, key/value head, split). The row's cache row and its new
token's position come from the device (no host sync, so a CUDA graph replays it for any lengths);
it reads keys and values [BLOCK_N, dim] of its own cache row only, up to and with the new token, and
runs the online softmax of FlashAttention for the GROUP query heads that share the key/value head,
as one [GROUP_PAD, dim] tile (padded to 16 rows: the tensor cores' smallest M). The FP8 key scale
(with 1/sqrt(dim) and log2(e): exp2 in the loop) is folded into the query, the value scale into the
output, as `folded` and `packed` do (decode_attention.py).

Split-K ("flash decoding"): where rows x key/value heads are too few programs to fill the GPU and
the rows are long, each row's keys are cut into SPLITS chunks of `chunk` keys, each program writes
its unnormalised output with its running maximum and sum (float32), and `combine_kernel` weighs the
chunks into the output. `split_count` chooses from the fixed shapes alone (rows, the keys' bucketed
extent), so a graph captured for a bucket holds its own choice. A chunk past a row's length holds
nothing (maximum -inf, sum 0) and weighs nothing.

The cache is e4m3 bits (uint8: cache.py says why) with FP8, else the model's dtype; queries and
output in the model's dtype (fp16, bf16, or float32: products in IEEE float32 then, not TF32, as the
CPU tests and device_check's float32 check want the reference's numbers). Products in the model's
dtype with float32 sums, probabilities rounded to it before the product with the values, as
FlashAttention does.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import math
from typing import Any

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines import split_k

BLOCK_N = 64  # keys a loop step reads (64 x 128 bytes of FP8 keys, and values)
WARPS, STAGES = 4, 2  # not tuned: the next GPU call's profile says what the kernel costs
SPLIT_KEYS = 256  # the fewest keys a split's chunk holds (fewer: the combine costs the gain)
LOG2E = 1.4426950408889634


@triton.jit  # type: ignore[untyped-decorator]
def decode_kernel(  # type: ignore[no-untyped-def]
    q_ptr,  # [rows, heads, DIM] in the model's dtype (last dimension contiguous)
    k_ptr,  # the layer's cache keys [cache rows, length, KV_HEADS, DIM], contiguous
    v_ptr,  # its values, the same
    rows_ptr,  # int64 [rows]: each row's cache row
    last_ptr,  # int64 [rows]: each row's new token's position (its keys: 0..last)
    out_ptr,  # [rows, heads, DIM] in the model's dtype, contiguous (SPLITS == 1)
    part_ptr,  # float32 [rows, heads, SPLITS, DIM]: each chunk's unnormalised output (SPLITS > 1)
    stats_ptr,  # float32 [rows, heads, SPLITS, 2]: each chunk's running maximum and sum
    q_row_stride,
    q_head_stride,
    q_scale,  # the key scale x 1/sqrt(dim) x log2(e)
    v_scale,
    cache_length,
    chunk,  # keys per split (a multiple of BLOCK_N)
    KV_HEADS: tl.constexpr,
    GROUP: tl.constexpr,
    GROUP_PAD: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    FP8: tl.constexpr,
    IEEE: tl.constexpr,
    SPLITS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0)
    kv = tl.program_id(1)
    split = tl.program_id(2)
    dot_type = q_ptr.dtype.element_ty
    cache_row = tl.load(rows_ptr + row)
    length = tl.load(last_ptr + row) + 1
    start = split * chunk
    end = tl.minimum(start + chunk, length)

    g = tl.arange(0, GROUP_PAD)
    d = tl.arange(0, DIM_PAD)
    g_ok = g < GROUP
    d_ok = d < DIM
    heads = kv * GROUP + g  # the query heads of this key/value head
    q = tl.load(
        q_ptr + row * q_row_stride + heads[:, None] * q_head_stride + d[None, :],
        mask=g_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    q = (q.to(tl.float32) * q_scale).to(dot_type)

    # int64 throughout (cache_row is): the cache passes 2**31 bytes
    base = cache_row * cache_length * (KV_HEADS * DIM) + kv * DIM
    maximum = tl.full((GROUP_PAD,), float("-inf"), dtype=tl.float32)
    total = tl.zeros((GROUP_PAD,), dtype=tl.float32)
    acc = tl.zeros((GROUP_PAD, DIM_PAD), dtype=tl.float32)
    for first in range(start, end, BLOCK_N):
        n = first + tl.arange(0, BLOCK_N)
        n_ok = n < end
        at = base + n[:, None] * (KV_HEADS * DIM) + d[None, :]
        ok = n_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + at, mask=ok, other=0)
        if FP8:
            k = k.to(tl.float8e4nv, bitcast=True)
        if IEEE:
            s = tl.dot(q, tl.trans(k.to(dot_type)), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k.to(dot_type)))
        s = tl.where(n_ok[None, :], s, float("-inf"))
        new_maximum = tl.maximum(maximum, tl.max(s, axis=1))
        rescale = tl.exp2(maximum - new_maximum)
        p = tl.exp2(s - new_maximum[:, None])
        total = total * rescale + tl.sum(p, axis=1)
        v = tl.load(v_ptr + at, mask=ok, other=0)
        if FP8:
            v = v.to(tl.float8e4nv, bitcast=True)
        if IEEE:
            pv = tl.dot(p.to(dot_type), v.to(dot_type), input_precision="ieee")
        else:
            pv = tl.dot(p.to(dot_type), v.to(dot_type))
        acc = acc * rescale[:, None] + pv
        maximum = new_maximum

    head_rows = row * (KV_HEADS * GROUP) + heads
    if SPLITS == 1:
        out = acc / total[:, None] * v_scale
        tl.store(
            out_ptr + head_rows[:, None] * DIM + d[None, :],
            out.to(out_ptr.dtype.element_ty),
            mask=g_ok[:, None] & d_ok[None, :],
        )
    else:
        chunk_rows = head_rows * SPLITS + split
        tl.store(
            part_ptr + chunk_rows[:, None] * DIM + d[None, :],
            acc,
            mask=g_ok[:, None] & d_ok[None, :],
        )
        tl.store(stats_ptr + chunk_rows * 2, maximum, mask=g_ok)
        tl.store(stats_ptr + chunk_rows * 2 + 1, total, mask=g_ok)


@triton.jit  # type: ignore[untyped-decorator]
def combine_kernel(  # type: ignore[no-untyped-def]
    part_ptr,  # float32 [rows x heads, SPLITS, DIM]
    stats_ptr,  # float32 [rows x heads, SPLITS, 2]
    out_ptr,  # [rows x heads, DIM] in the model's dtype
    v_scale,
    SPLITS: tl.constexpr,
    SPLITS_PAD: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
):
    """One program per (row, query head): its chunks weighed by exp2(their maximum - the
    largest) into the output. The first chunk of every row holds a key (its length >= 1), so the
    largest maximum is finite."""
    head_row = tl.program_id(0)
    s = tl.arange(0, SPLITS_PAD)
    d = tl.arange(0, DIM_PAD)
    s_ok = s < SPLITS
    chunks = head_row * SPLITS + s
    maximum = tl.load(stats_ptr + chunks * 2, mask=s_ok, other=float("-inf"))
    total = tl.load(stats_ptr + chunks * 2 + 1, mask=s_ok, other=0.0)
    weight = tl.exp2(maximum - tl.max(maximum, axis=0))
    part = tl.load(
        part_ptr + chunks[:, None] * DIM + d[None, :],
        mask=s_ok[:, None] & (d < DIM)[None, :],
        other=0.0,
    )
    out = tl.sum(part * weight[:, None], axis=0) / tl.sum(total * weight, axis=0) * v_scale
    tl.store(out_ptr + head_row * DIM + d, out.to(out_ptr.dtype.element_ty), mask=d < DIM)


def split_count(
    rows: int, kv_heads: int, extent: int, programs: int, least: int = SPLIT_KEYS
) -> int:
    """How many chunks each row's keys are cut into (split_k.split_count): 1 where rows x
    kv_heads programs already reach `programs` (the GPU's fill: 2 per SM), else as many as make up
    the difference, each at least `least` of the `extent` keys (the longest row's length rounded
    up to its bucket)."""
    return split_k.split_count(rows * kv_heads, programs, extent, least)


def _pad(size: int, least: int) -> int:
    return max(least, 1 << (size - 1).bit_length())


def attention(
    torch: Any,
    q: Any,
    keys: Any,
    values: Any,
    rows: Any,
    last: Any,
    scales: tuple[float, float],
    fp8: bool,
    splits: int = 1,
    extent: int = 0,
) -> Any:
    """q [rows, heads, dim] (model dtype, last dimension contiguous); keys, values the layer's cache
    [cache rows, length, kv_heads, dim] (contiguous; e4m3 bits with `fp8`); rows, last int64 [rows]:
    each row's cache row and its new token's position. Returns [rows, heads, dim] in q's dtype:
    each row's attention over its cache's keys 0..last, scaled by `scales` (key, value). With
    `splits` > 1 each row's first `extent` keys (at least its length) cut into that many chunks."""
    count, heads, dim = q.shape
    _, length, kv_heads, _ = keys.shape
    if q.stride(2) != 1 or not keys.is_contiguous() or not values.is_contiguous():
        raise ValueError("decode_kernel: q's last dimension and the cache must be contiguous")
    if heads % kv_heads:
        raise ValueError(f"decode_kernel: {heads} query heads over {kv_heads} key/value heads")
    group = heads // kv_heads
    k_scale, v_scale = scales
    out = q.new_empty((count, heads, dim))
    chunk = length
    if splits > 1:
        chunk = -(-extent // (splits * BLOCK_N)) * BLOCK_N  # a multiple of BLOCK_N
        part = q.new_empty((count, heads, splits, dim), dtype=torch.float32)
        stats = q.new_empty((count, heads, splits, 2), dtype=torch.float32)
    else:
        part = stats = out  # never touched: SPLITS == 1 stores the output itself
    decode_kernel[(count, kv_heads, splits)](
        q, keys, values, rows, last, out, part, stats,
        q.stride(0), q.stride(1), k_scale * LOG2E / math.sqrt(dim), v_scale, length, chunk,
        KV_HEADS=kv_heads, GROUP=group, GROUP_PAD=_pad(group, 16), DIM=dim,
        DIM_PAD=_pad(dim, 16), FP8=fp8, IEEE=q.element_size() == 4, SPLITS=splits,
        BLOCK_N=BLOCK_N, num_warps=WARPS, num_stages=STAGES,
    )  # fmt: skip
    if splits > 1:
        combine_kernel[(count * heads,)](
            part, stats, out, v_scale,
            SPLITS=splits, SPLITS_PAD=_pad(splits, 2), DIM=dim, DIM_PAD=_pad(dim, 16),
            num_warps=WARPS,
        )  # fmt: skip
    return out
