"""The torch Llama engine's fused input kernels (fused_kernels.py, option `fused`) on the CPU: under
Triton's interpreter (its float casts replaced by torch's round-to-nearest-even, the GPU's) each
kernel gives its torch reference's (elementwise.py) e4m3 bytes and scales bit for bit, on widths
under, across and past a chunk, in float32, fp16 and bf16, an outlier row and an all-zero row among
them; the tiny Llama's engine decodes with the kernels interpreted to the tokens it decodes on the
reference (llama_interpreted_fused.py, in a process of its own with TRITON_INTERPRET=1); and each
kernel compiled for Hopper (sm_90) at Llama-2-70B's widths, what an H200 would be given: the
e4m3 conversion in hardware, IEEE division, nothing spilled. Skipped where torch or triton is not
installed (CI); the GPU's profile times them (device_profile.py's `fused` variant)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hopper_compile import compile_for_hopper, cubin_resources
from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton

HIDDEN, INNER = 8192, 28672  # Llama-2-70B's widths (one GPU: no tensor-parallel split)


def _interpreted(*argv: str) -> str:
    import llama_interpreted_fused

    return run_interpreted(llama_interpreted_fused.__file__, 900, *argv)


def test_the_kernels_give_their_references_bytes_and_scales() -> None:
    out = _interpreted()
    assert out.count("equal to the reference") == (4 * 3 + 2) * 3 and "DIFFER" not in out, out


@pytest.mark.slow  # minutes on a 2-core CPU: the interpreter runs every program in Python
def test_the_engine_decodes_alike_with_the_kernels_interpreted() -> None:
    out = _interpreted("engine")
    assert "engine fused=1: 8 of 8 prompts equal" in out, out


def _compiled(name: str, has_delta: bool, tmp_path: Path) -> tuple[str, dict[str, int]]:
    from mlperf_harness.engines import fp8_row_kernels
    from mlperf_harness.engines.torch_llama import fused_kernels

    kernel = getattr(fused_kernels, name)
    types: dict[str, str] = {}
    constants: dict[str, object] = {"CHUNK": fp8_row_kernels.CHUNK}
    if name == "norm_quant_kernel":
        types = {p: "*bf16" for p in ("x_ptr", "delta_ptr", "sum_ptr", "w_ptr")}
        types |= {"q_ptr": "*fp8e4nv", "scale_ptr": "*fp32", "width": "i32", "eps": "fp32"}
        constants["HAS_DELTA"] = has_delta
    elif name == "rotary_kernel":
        types = {"x_ptr": "*bf16", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "out_ptr": "*bf16"}
        types |= dict.fromkeys(("heads", "x_token_stride", "x_head_stride"), "i32")
        constants = {"HALF": 64, "HALF_PAD": 64, "BLOCK_H": fused_kernels.ROTARY_HEADS}
    else:
        types = {"gate_up_ptr": "*bf16", "q_ptr": "*fp8e4nv", "scale_ptr": "*fp32", "inner": "i32"}
    # what a launch specialises as divisible by 16: torch's allocations, the widths
    aligned = tuple(p for p in types if p.endswith("_ptr") or p in ("width", "inner"))
    compiled = compile_for_hopper(
        kernel, types, constants, aligned, num_warps=fp8_row_kernels.WARPS,
        enable_fp_fusion=name != "rotary_kernel",  # as fused_kernels.rotated launches it
    )  # fmt: skip
    return str(compiled.asm["ptx"]), cubin_resources(compiled.asm["cubin"], tmp_path)


@pytest.mark.parametrize(
    ("name", "has_delta"),
    [
        ("norm_quant_kernel", False),
        ("norm_quant_kernel", True),
        ("swiglu_quant_kernel", False),
    ],  # the quantization alone: the shared kernel's (engines/test_fp8_row_kernels.py)
)
def test_each_kernel_compiles_for_hopper_without_spilling(
    name: str, has_delta: bool, tmp_path: Path
) -> None:
    ptx, used = _compiled(name, has_delta, tmp_path)
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx  # e4m3 in hardware, nearest even, saturating
    assert "div.rn.f32" in ptx  # the scale's division IEEE-rounded, as torch divides
    assert used["LOCAL"] == 0 and used["STACK"] == 0, used  # nothing spilled


def test_the_rotary_kernel_compiles_for_hopper_with_rounded_products(tmp_path: Path) -> None:
    ptx, used = _compiled("rotary_kernel", False, tmp_path)
    assert "fma.rn.f32" not in ptx  # a x cos - b x sin: two rounded products, as torch's
    assert "cvt.rn.bf16" in ptx  # the result rounded to bf16, nearest even
    assert used["LOCAL"] == 0 and used["STACK"] == 0, used
