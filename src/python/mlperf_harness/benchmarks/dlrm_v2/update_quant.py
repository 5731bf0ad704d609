"""DLRM-v2's FP8 cross layers: the update x' = x + x0 * (c + b) (c = W y, the layer's second
product, its bias b left for here) and x' quantized row-wise for the next product, as one Triton
kernel. Done with torch it is four passes over [pairs, 3,456] (the bias, the update, the row
maxima, the e4m3 bytes, with a float32 copy between the last two); here one pass reads c, x and x0
and writes x' in fp16 (the next layer's x) and in e4m3 with its row's scale (the next product's
input), and a second reads x' back while it is still in L2. It moves its bytes at about 4 TB/s on
an H200 (row_quant_ab, 2026-11-30): a program a row held whole in registers was within 3% of it.

The arithmetic is fp8_rows.reference_update_quantized's: c + b, x0 times that, x plus that, each
rounded in float32 (no fused multiply-add: the launch turns contraction off), x' rounded to fp16,
then engines/fp8_row_kernels' row scale and IEEE-rounded division of the fp16 x'.

Imports triton: only GPU hosts (and CPU tests under TRITON_INTERPRET=1) import this module.
"""

from __future__ import annotations

from typing import Any

import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
import triton.language as tl  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.fp8_row_kernels import CHUNK, WARPS, outputs, row_scale, store_e4m3
from mlperf_harness.errors import HarnessError


@triton.jit  # type: ignore[untyped-decorator]
def update_quant_kernel(  # type: ignore[no-untyped-def]
    x_ptr,  # fp16 [rows, width] (rows x_stride apart): the layer's input
    x0_ptr,  # fp16 [rows, width] (rows x0_stride apart): the cross network's input
    c_ptr,  # fp16 [rows, width], contiguous: W y without its bias
    bias_ptr,  # fp16 [width]
    out_ptr,  # fp16 [rows, width] out, contiguous: x'
    q_ptr,  # e4m3 [rows, width] out, contiguous
    scale_ptr,  # float32 [rows] out
    width,
    x_stride,
    x0_stride,
    CHUNK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    target = row * width
    largest = tl.zeros([CHUNK], tl.float32)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
        x0 = tl.load(x0_ptr + row * x0_stride + cols, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(c_ptr + target + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        updated = (x + x0 * (c + b)).to(tl.float16)
        tl.store(out_ptr + target + cols, updated, mask=mask)
        largest = tl.maximum(largest, tl.abs(updated.to(tl.float32)))
    scale = row_scale(largest, scale_ptr, row)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        updated = tl.load(out_ptr + target + cols, mask=mask, other=0.0).to(tl.float32)
        store_e4m3(q_ptr, target + cols, updated, scale, mask)


def update_quantized(torch: Any, x: Any, x0: Any, c: Any, bias: Any) -> tuple[Any, Any, Any]:
    """(x' fp16 [rows, width], its e4m3 bytes [rows, width], float32 scales [rows, 1]) for
    x' = x + x0 * (c + bias); `x` and `x0` fp16 [rows, width] with unit column stride (column
    slices are fine), `c` fp16 [rows, width], `bias` fp16 [width]."""
    c = c.contiguous()
    rows, width = c.shape
    for name, tensor in (("x", x), ("x0", x0), ("c", c)):
        if tensor.dtype != torch.float16 or tuple(tensor.shape) != (rows, width):
            raise HarnessError(f"the update kernel reads fp16 {name} [{rows}, {width}]")
        if tensor.stride(-1) != 1:
            raise HarnessError(f"the update kernel reads {name} with unit column stride")
    out = torch.empty((rows, width), dtype=torch.float16, device=c.device)
    q, scale = outputs(torch, rows, width, c.device)
    if rows:
        update_quant_kernel[(rows,)](
            x, x0, c, bias, out, q, scale, width, x.stride(0), x0.stride(0), CHUNK=CHUNK,
            num_warps=WARPS,
            enable_fp_fusion=False,  # x + x0 * t as two rounded operations, as the reference's
        )  # fmt: skip
    return out, q, scale
