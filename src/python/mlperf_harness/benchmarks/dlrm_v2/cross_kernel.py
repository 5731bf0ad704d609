"""A DLRM-DCNv2 cross layer's second product and its update as one Triton kernel:
out = x + x0 * (y @ W^T + b), for fp16 y [M, K] (the layer's V x), W [N, K], b [N], x and x0
[M, N], fp32 accumulation, fp16 out.

torch does it in two kernels and four passes over [M, N]: addmm writes c = y W^T + b, addcmul reads
c, x0 and x and writes x'. Here a program computes one [BLOCK_M, BLOCK_N] tile of the product on
the tensor cores (both operands K-contiguous: y's rows and W's rows, as Linear holds the weight),
then reads that tile of x0 and x and writes x' only: c never leaves the registers, and its fp16
rounding is gone (the update is taken on the fp32 sums).

Tiles go in grouped order (GROUP_M row blocks take every column block before the next group: the
W tiles they share stay in L2). Every load and store is masked, so M, N and K need not be
multiples of the blocks (the small stand-in's layers are 216 wide, rank 32).

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

# The argument a batch size changes, not specialised on: one compile serves every bucket.
BATCH_ARGUMENTS = ("M",)


@triton.jit(do_not_specialize=BATCH_ARGUMENTS)  # type: ignore[untyped-decorator]
def cross_update_kernel(  # type: ignore[no-untyped-def]
    y_ptr,  # fp16 [M, K], rows Y_STRIDE apart
    w_ptr,  # fp16 [N, K], rows K apart
    b_ptr,  # fp16 [N]
    x_ptr,  # fp16 [M, N], rows X_STRIDE apart
    x0_ptr,  # fp16 [M, N], rows X0_STRIDE apart
    out_ptr,  # fp16 [M, N], rows N apart
    M,
    N,
    K,
    Y_STRIDE,
    X_STRIDE,
    X0_STRIDE,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,  # K a multiple of BLOCK_K (the real 512): loads unmasked in K
):
    tile = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * blocks_n
    first_m = (tile // in_group) * GROUP_M
    group_rows = tl.minimum(blocks_m - first_m, GROUP_M)
    row_block = first_m + (tile % in_group) % group_rows
    column_block = (tile % in_group) // group_rows

    rows = (row_block * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    columns = column_block * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ok = rows < M
    columns_ok = columns < N
    depth = tl.arange(0, BLOCK_K)
    y_tile = y_ptr + rows[:, None] * Y_STRIDE + depth[None, :]
    w_tile = w_ptr + columns[:, None] * K + depth[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(y_tile + start, mask=rows_ok[:, None], other=0.0)
            b = tl.load(w_tile + start, mask=columns_ok[:, None], other=0.0)
        else:
            depth_ok = (start + depth) < K
            a = tl.load(y_tile + start, mask=rows_ok[:, None] & depth_ok[None, :], other=0.0)
            b = tl.load(w_tile + start, mask=columns_ok[:, None] & depth_ok[None, :], other=0.0)
        acc = tl.dot(a, tl.trans(b), acc, out_dtype=tl.float32)

    bias = tl.load(b_ptr + columns, mask=columns_ok, other=0.0).to(tl.float32)
    inside = rows_ok[:, None] & columns_ok[None, :]
    x0 = tl.load(x0_ptr + rows[:, None] * X0_STRIDE + columns[None, :], mask=inside, other=0.0)
    x = tl.load(x_ptr + rows[:, None] * X_STRIDE + columns[None, :], mask=inside, other=0.0)
    updated = x.to(tl.float32) + x0.to(tl.float32) * (acc + bias[None, :])
    tl.store(out_ptr + rows[:, None] * N + columns[None, :], updated.to(tl.float16), mask=inside)
