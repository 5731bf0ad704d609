"""The shared row-wise e4m3 quantization kernel (engines/fp8_row_kernels.py) compiled for Hopper
(sm_90) on this CPU, in the forms its users launch: Llama's output projection input (bf16, the
quantization alone) and DLRM-v2's MLP inputs (fp16, the previous product's bias added and its ReLU
taken first), chunked and in one pass (rows held whole, several narrow ones a program): the e4m3
conversion in hardware, nearest even and saturating, the scale's division IEEE-rounded as torch
divides, nothing spilled. What it computes is checked under Triton's interpreter against torch's
arithmetic by test_llama_fused_inputs.py and DLRM-v2's test_fp8_rows.py. Skipped where torch or
triton is not installed (CI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hopper_compile import compile_for_hopper, cubin_resources
from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton


@pytest.mark.parametrize(("dtype", "bias_relu"), [("bf16", False), ("fp16", True)])
def test_the_quantization_compiles_for_hopper_without_spilling(
    dtype: str, bias_relu: bool, tmp_path: Path
) -> None:
    from mlperf_harness.engines import fp8_row_kernels

    types = {"x_ptr": f"*{dtype}", "bias_ptr": f"*{dtype}", "q_ptr": "*fp8e4nv"}
    types |= {"scale_ptr": "*fp32", "width": "i32", "x_stride": "i32"}
    constants = {"HAS_BIAS": bias_relu, "RELU": bias_relu, "CHUNK": fp8_row_kernels.CHUNK}
    compiled = compile_for_hopper(
        fp8_row_kernels.quant_kernel, types, constants, tuple(types),
        num_warps=fp8_row_kernels.WARPS,
    )  # fmt: skip
    assert_e4m3_in_hardware_without_spilling(compiled, tmp_path)


@pytest.mark.parametrize("width", [512, 3456, 8192])  # many rows a program, one, the widest held
def test_the_one_pass_quantization_compiles_for_hopper_without_spilling(
    width: int, tmp_path: Path
) -> None:
    from mlperf_harness.engines import fp8_row_kernels

    types = {"x_ptr": "*fp16", "bias_ptr": "*fp16", "q_ptr": "*fp8e4nv", "scale_ptr": "*fp32"}
    types |= dict.fromkeys(("rows", "width", "x_stride"), "i32")
    block, per_program, warps = fp8_row_kernels.one_pass_tile(width)
    constants = {"HAS_BIAS": True, "RELU": True, "BLOCK": block, "ROWS": per_program}
    compiled = compile_for_hopper(
        fp8_row_kernels.quant_rows_kernel, types, constants, tuple(types), num_warps=warps
    )
    assert_e4m3_in_hardware_without_spilling(compiled, tmp_path)


def assert_e4m3_in_hardware_without_spilling(compiled: object, tmp_path: Path) -> None:
    asm = compiled.asm  # type: ignore[attr-defined]
    ptx = str(asm["ptx"])
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx  # e4m3 in hardware, nearest even, saturating
    assert "div.rn.f32" in ptx  # the scale's division IEEE-rounded, as torch divides
    used = cubin_resources(asm["cubin"], tmp_path)
    assert used["LOCAL"] == 0 and used["STACK"] == 0, used  # nothing spilled
