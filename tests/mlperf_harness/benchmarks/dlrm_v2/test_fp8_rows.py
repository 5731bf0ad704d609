"""DLRM-v2's FP8 dense part's quantizations (fp8_rows.py) on the CPU: under Triton's interpreter
the kernels (the shared row quantization with a bias and ReLU first, and the cross layers' update
that writes x' in fp16 and e4m3 at once) give their torch reference's bytes, scales and updated
rows bit for bit, on widths of many rows a program, of one, at the real 3,456 and past the widest
the one-pass quantization holds, on column slices, an outlier and an all-zero row among them; and
the dense part's probabilities with the kernels equal those with the reference
(dlrm_fp8_rows_interpreted.py, in a process of its own with TRITON_INTERPRET=1).
The update kernel compiled for Hopper (sm_90): e4m3 in hardware, IEEE division, no fused
multiply-add (the reference's two roundings), nothing spilled. Skipped where torch or triton is
not installed (CI)."""

from __future__ import annotations

from pathlib import Path

from hopper_compile import compile_for_hopper, cubin_resources
from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def test_the_kernels_give_their_references_bits() -> None:
    import dlrm_fp8_rows_interpreted

    out = run_interpreted(dlrm_fp8_rows_interpreted.__file__, 600)
    # 4 widths x 2 layouts x (4 quantizations + the update), the dense part
    assert out.count(": equal") == 4 * 2 * 5 + 1 and "DIFFER" not in out, out


def test_the_update_kernel_compiles_for_hopper_without_spilling(tmp_path: Path) -> None:
    from mlperf_harness.benchmarks.dlrm_v2 import update_quant
    from mlperf_harness.engines import fp8_row_kernels

    types = {name: "*fp16" for name in ("x_ptr", "x0_ptr", "c_ptr", "bias_ptr", "out_ptr")}
    types |= {"q_ptr": "*fp8e4nv", "scale_ptr": "*fp32"}
    types |= dict.fromkeys(("width", "x_stride", "x0_stride"), "i32")
    compiled = compile_for_hopper(
        update_quant.update_quant_kernel, types, {"CHUNK": fp8_row_kernels.CHUNK}, tuple(types),
        num_warps=fp8_row_kernels.WARPS, enable_fp_fusion=False,  # as update_quantized launches it
    )  # fmt: skip
    ptx = str(compiled.asm["ptx"])
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "div.rn.f32" in ptx
    assert "fma.rn.f32" not in ptx  # x + x0 * t: two rounded operations, as the reference's
    used = cubin_resources(compiled.asm["cubin"], tmp_path)
    assert used["LOCAL"] == 0 and used["STACK"] == 0, used
