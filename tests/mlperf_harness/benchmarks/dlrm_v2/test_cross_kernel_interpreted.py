"""DLRM-v2's fused cross layer update (cross_kernel.py) on the CPU, under Triton's interpreter,
against the float32 update of the same fp16 operands: the small stand-in's widths, sizes that are
no multiple of any block (M, N and K), x and x0 as column slices of wider rows, no rows, every
launch form the device script's A/B times, operands the kernel cannot read refused in one line,
the dense part (DenseLayers) with the kernel against torch's; (slow) the small stand-in's held-out
AUC through DenseLayers with the kernel against the torch path's; and torch_raw --cross_ab's
comparison of one layer's update, timed by the wall clock (dlrm_cross_interpreted.py, in a process
of its own with TRITON_INTERPRET=1). Skipped where torch or triton is not installed (CI);
torch_raw --cross_ab times the same comparison compiled, on a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def test_the_kernel_computes_the_float32_update() -> None:
    import dlrm_cross_interpreted

    stdout = run_interpreted(dlrm_cross_interpreted.__file__, timeout=300)
    assert "DIFFER" not in stdout, stdout
    assert stdout.count(": equal") == 5 * 8 + 2 + 1 + 1, stdout


@pytest.mark.slow
def test_the_stand_ins_auc_with_the_kernel_is_the_torch_paths(tmp_path: Path) -> None:
    import dlrm_cross_interpreted

    stdout = run_interpreted(dlrm_cross_interpreted.__file__, 900, "--scratch_path", str(tmp_path))
    assert "stand-in AUC kernel = torch: equal" in stdout and "DIFFER" not in stdout, stdout
