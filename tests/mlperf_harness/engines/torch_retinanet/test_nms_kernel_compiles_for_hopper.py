"""RetinaNet's NMS kernels compiled for Hopper (sm_90) on this CPU (Triton's compiler and ptxas need
no GPU): both compile at the engine's sizes, and the IoU's products are rounded on their own
(`mul.rn.f32`) with no FMA to fuse them into the sums after them, and its quotient is `div.rn`, so
the bits the GPU computes are the host's. Skipped where torch or triton is not installed (CI)."""

from __future__ import annotations

from hopper_compile import hopper_ptx
from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton


def test_the_overlap_bits_round_as_the_host() -> None:
    from mlperf_harness.engines.torch_retinanet import nms_kernel

    ptx = hopper_ptx(
        nms_kernel.overlap_bits_kernel,
        {
            "boxes_ptr": "*fp32",
            "labels_ptr": "*i64",
            "bits_ptr": "*i64",
            "K": "i32",
            "W": "i32",
            "threshold": "fp32",
        },
        {
            "ROUNDED_MUL": True,
            "BLOCK_ROWS": nms_kernel.BLOCK_ROWS,
            "BLOCK_WORDS": nms_kernel.BLOCK_WORDS,
        },
        aligned=("boxes_ptr", "labels_ptr", "bits_ptr"),
        num_warps=nms_kernel.BITS_WARPS,
    )
    assert "mul.rn.f32" in ptx
    assert "div.rn.f32" in ptx
    assert "fma.rn.f32" not in ptx and "div.full.f32" not in ptx


def test_the_scan_compiles() -> None:
    from mlperf_harness.engines.torch_retinanet import nms_kernel

    words = nms_kernel.words_for(5024)  # the engine's candidates: 5,000 padded to whole words
    ptx = hopper_ptx(
        nms_kernel.greedy_scan_kernel,
        {"bits_ptr": "*i64", "valid_ptr": "*u8", "keep_ptr": "*u8", "K": "i32", "W": "i32"},
        {"WORDS": 1 << (words - 1).bit_length()},
        aligned=("bits_ptr", "valid_ptr", "keep_ptr"),
        num_warps=nms_kernel.SCAN_WARPS,
    )
    assert ".entry greedy_scan_kernel" in ptx
