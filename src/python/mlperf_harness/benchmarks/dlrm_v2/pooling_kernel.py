"""DLRM-v2's pooled lookups as one Triton kernel: for every pair, the sum of each of its bags' rows
of the stacked table (fp32 accumulation, fp16 out), in the layout the dense part reads
([pairs, bags * width]: a pair's pooled rows side by side, table after table).

Every pair's bags have the same sizes (MULTI_HOT_SIZES: column c of a pair's indices belongs to bag
`bag_of_column[c]`), so a program takes whole pairs: it reads a pair's indices CHUNK at a time,
loads those CHUNK rows at once (each row one vector of the width), and adds each row into its bag
with one small matrix product: a [bags, CHUNK] 0/1 matrix (which bag each column is in) times the
[CHUNK, width] rows, on the tensor cores, accumulated in fp32. The chunks of a pair do not depend on
each other, so a program has up to all of a pair's rows in flight (214 random 256-byte reads) where
torch's embedding_bag walks each bag's rows one after another.

fp16 rows: the product's terms are 1 x value, exact in fp32. int8 rows (int8_rows.py's layout: q,
then the row's fp16 scale s): the 0/1 matrix holds s instead of 1 and the rows are q as fp16, so
each term is q * s, exact in fp32 (11-bit by 8-bit significands).

ROW_LO / ROW_HI: only rows in [ROW_LO, ROW_HI) of the stacked table are read, at row - ROW_LO of
this table (a shard's rows); the others add nothing.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep


@triton.jit  # type: ignore[untyped-decorator]
def pooled_rows_kernel(  # type: ignore[no-untyped-def]
    sparse_ptr,  # int32 [pairs, COLUMNS] (rows SPARSE_STRIDE apart): each table's own row numbers
    base_ptr,  # int64 [COLUMNS]: the stacked row where each column's table starts
    bag_ptr,  # int32 [COLUMNS]: each column's bag (its table), 0 .. BAGS - 1
    table_ptr,  # fp16 [rows, TABLE_STRIDE], or int8 [rows, TABLE_STRIDE] (INT8)
    scale_ptr,  # INT8: the same memory as fp16 [rows, TABLE_STRIDE // 2]; unread otherwise
    out_ptr,  # fp16 [pairs, BAGS * WIDTH] (rows OUT_STRIDE apart: columns of a wider tensor do)
    pairs,
    row_lo,
    row_hi,
    SPARSE_STRIDE,
    TABLE_STRIDE,
    OUT_STRIDE,
    COLUMNS: tl.constexpr,
    BAGS: tl.constexpr,
    WIDTH: tl.constexpr,
    BAGS_BLOCK: tl.constexpr,  # BAGS rounded up to a power of two, at least 16 (a product's side)
    WIDTH_BLOCK: tl.constexpr,  # WIDTH likewise
    CHUNK: tl.constexpr,  # columns (rows) loaded at once: a power of two, at least 16
    PAIRS_PER_PROGRAM: tl.constexpr,
    INT8: tl.constexpr,
):
    bags = tl.arange(0, BAGS_BLOCK)
    dims = tl.arange(0, WIDTH_BLOCK)
    dims_ok = dims < WIDTH
    for step in tl.static_range(PAIRS_PER_PROGRAM):
        pair = (tl.program_id(0) * PAIRS_PER_PROGRAM + step).to(tl.int64)
        total = tl.zeros((BAGS_BLOCK, WIDTH_BLOCK), dtype=tl.float32)
        for start in tl.static_range(0, COLUMNS, CHUNK):
            columns = start + tl.arange(0, CHUNK)
            live = (columns < COLUMNS) & (pair < pairs)
            index = tl.load(sparse_ptr + pair * SPARSE_STRIDE + columns, mask=live, other=0)
            row = index.to(tl.int64) + tl.load(base_ptr + columns, mask=live, other=0)
            read = live & (row >= row_lo) & (row < row_hi)
            row = tl.where(read, row - row_lo, 0)
            bag = tl.load(bag_ptr + columns, mask=live, other=-1)
            values = tl.load(
                table_ptr + row[:, None] * TABLE_STRIDE + dims[None, :],
                mask=read[:, None] & dims_ok[None, :],
                other=0,
            )
            if INT8:
                weight = tl.load(
                    scale_ptr + row * (TABLE_STRIDE // 2) + WIDTH // 2, mask=read, other=0.0
                )
            else:
                weight = tl.where(read, 1.0, 0.0).to(tl.float16)
            member = bags[:, None] == bag[None, :]
            pooling = tl.where(member, weight[None, :], 0.0).to(tl.float16)
            total = tl.dot(pooling, values.to(tl.float16), total, out_dtype=tl.float32)
        out = out_ptr + pair * OUT_STRIDE + bags[:, None] * WIDTH + dims[None, :]
        tl.store(
            out,
            total.to(tl.float16),
            mask=(bags[:, None] < BAGS) & dims_ok[None, :] & (pair < pairs),
        )
