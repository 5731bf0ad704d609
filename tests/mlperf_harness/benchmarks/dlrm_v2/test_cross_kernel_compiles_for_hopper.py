"""DLRM-v2's fused cross layer update (cross_kernel.py) compiled for Hopper (sm_90) on this CPU
(Triton's compiler and ptxas need no GPU): every launch form the device script's A/B times, at the
real widths (3,456 wide, rank 512), compiles; multiplies on Hopper's warpgroup tensor cores (wgmma,
fp16 operands, fp32 sums); and keeps the fp32 tile and the epilogue's x and x0 tiles in registers
(nothing spilled to local memory). Prints each form's registers a thread and shared memory. Where
the interpreter checks what the kernel computes (test_cross_kernel_interpreted), this checks what
an H200 would be given. Skipped where torch or triton is not installed (CI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hopper_compile import compile_for_hopper, cubin_resources
from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton

POINTERS = ("y_ptr", "w_ptr", "b_ptr", "x_ptr", "x0_ptr", "out_ptr")
INTEGERS = ("M", "N", "K", "Y_STRIDE", "X_STRIDE", "X0_STRIDE")
# What a real-size launch finds divisible by 16: every pointer (torch's allocations), the widths
# and row strides (3,456 and 512); not M (do_not_specialize: a batch's pairs).
ALIGNED = (*POINTERS, "N", "K", "Y_STRIDE", "X_STRIDE", "X0_STRIDE")
FORMS = 6
HOPPER_SHARED_BYTES = 232_448  # an H100's or H200's shared memory a block may take


@pytest.mark.parametrize("form", range(FORMS))
def test_every_form_multiplies_on_warpgroup_tensor_cores(
    form: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlperf_harness.benchmarks.dlrm_v2.cross_kernel import cross_update_kernel
    from mlperf_harness.benchmarks.dlrm_v2.cross_update import CANDIDATES

    assert len(CANDIDATES) == FORMS
    config = CANDIDATES[form]
    types = {name: "*fp16" for name in POINTERS} | dict.fromkeys(INTEGERS, "i32")
    constants = {
        "BLOCK_M": config.block_m,
        "BLOCK_N": config.block_n,
        "BLOCK_K": config.block_k,
        "GROUP_M": config.group_m,
        "EVEN_K": 512 % config.block_k == 0,
    }
    compiled = compile_for_hopper(
        cross_update_kernel,
        types,
        constants,
        ALIGNED,
        num_warps=config.warps,
        num_stages=config.stages,
    )
    ptx = str(compiled.asm["ptx"])
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", ptx), ptx[:2000]
    used = cubin_resources(compiled.asm["cubin"], tmp_path)
    assert used["LOCAL"] == 0 and used["STACK"] == 0, used  # nothing spilled
    with capsys.disabled():
        shared = (
            compiled.metadata.shared
        )  # the pipeline's stages: dynamic, not in the cubin's count
        print(f"\n{config.label()}: {used['REG']} registers a thread, {shared} B shared memory")
    assert compiled.metadata.shared <= HOPPER_SHARED_BYTES
