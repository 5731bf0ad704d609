"""Which output tile a Triton program of the FP8 convolution kernels computes: one jit function that
conv_kernel.py, pointwise_kernel.py and spatial_kernel.py call (Triton inlines it).

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep


@triton.jit  # type: ignore[untyped-decorator]
def tile_origin(tile, M, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):  # type: ignore[no-untyped-def]
    """(first row, first column) of output tile `tile` of an [M, K] result, in grouped order:
    GROUP_M consecutive row blocks take every column block before the next group starts, so the
    weight tiles they share are still in L2."""
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(K, BLOCK_N)
    in_group = GROUP_M * blocks_n
    first_m = (tile // in_group) * GROUP_M
    group_rows = tl.minimum(blocks_m - first_m, GROUP_M)
    row_block = first_m + (tile % in_group) % group_rows
    column_block = (tile % in_group) // group_rows
    return row_block * BLOCK_M, column_block * BLOCK_N
