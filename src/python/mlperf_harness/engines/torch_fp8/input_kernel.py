"""The FP8 engine's input as one Triton pass: the fp32 NCHW batch cast to fp16 in channels-last
(NHWC) memory, the layout every later kernel reads, with its 3 channels padded to 4 with zeros
(plan.INPUT_CHANNELS says why). On an H100 this pass takes 0.07 ms a batch of 256.

With GATHER the batch's images are rows of a larger array (a GPU's copy of the loaded samples), read
where they lie: the harness's gather and this pass are one pass over the samples instead of two
(an index_select into the input buffer first was 0.1 ms more of a batch of 256, 1.7% of the engine).

Each program takes a block of pixels and all their channels: it reads each channel's plane
contiguously and writes each pixel's channels side by side, so both sides move whole lines.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

BLOCK_M, WARPS = 256, 4


@triton.jit  # type: ignore[untyped-decorator]
def nhwc_half_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # fp32 [S, C, H, W], contiguous
    rows_ptr,  # int64 [N]: the image of x each output image is (GATHER; unused without)
    y_ptr,  # fp16 [N, H, W, C_OUT]: channels C and above are zeros
    M,  # pixels: N * H * W
    HW,
    C: tl.constexpr,
    C_OUT: tl.constexpr,
    BLOCK_C: tl.constexpr,  # C_OUT rounded up to a power of two (a block's width)
    BLOCK_M: tl.constexpr,
    GATHER: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_c = tl.arange(0, BLOCK_C)
    image = offs_m // HW
    pixel = offs_m - image * HW
    m_ok = (offs_m < M)[:, None]
    if GATHER:  # int64 rows: an offset into a large array overflows 32 bits
        image = tl.load(rows_ptr + image, mask=offs_m < M, other=0)
    source = (image * C * HW + pixel)[:, None] + (offs_c * HW)[None, :]
    values = tl.load(x_ptr + source, mask=m_ok & (offs_c < C)[None, :], other=0.0)
    target = y_ptr + offs_m[:, None] * C_OUT + offs_c[None, :]
    tl.store(target, values.to(tl.float16), mask=m_ok & (offs_c < C_OUT)[None, :])


def grid(m: int) -> tuple[int]:
    return (int(triton.cdiv(m, BLOCK_M)),)


def channel_block(channels: int) -> int:
    return int(triton.next_power_of_2(channels))
