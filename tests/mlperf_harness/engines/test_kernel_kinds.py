"""kernel_profile.kernel_kinds: a profile's kernels summed by kind, on kernel names of the forms an
H200 profile shows (cuDNN's and cuBLAS's convolutions and GEMMs, Inductor's and our Triton
kernels, copies, torch's own elementwise kernels)."""

from __future__ import annotations

from mlperf_harness.engines.kernel_profile import kernel_kinds


def _row(name: str, ms: float) -> dict[str, object]:
    return {"gpu_ms_per_step": ms, "calls_per_step": 1, "name": name}


def test_kernels_are_summed_by_kind_and_the_rest_is_other() -> None:
    top = [
        _row("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128", 4.0),
        _row("nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NNT", 1.5),
        _row("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x128x64", 0.5),
        _row("triton_poi_fused_add_convolution_relu_12", 0.75),  # the epilogue, not the conv
        _row("triton_red_fused_sum_3", 0.25),
        _row("conv_fp8_kernel", 2.0),
        _row("greedy_scan_kernel", 0.5),
        _row("Memcpy DtoD (Device -> Device)", 0.125),
        _row("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor>", 0.25),
    ]
    kinds = kernel_kinds(top)
    assert kinds == {
        "Inductor fusion": 1.0,
        "convolution or GEMM": 8.0,
        "copy or fill": 0.125,
        "other": 0.75,
    }
    assert kernel_kinds([]) == dict.fromkeys(kinds, 0.0)
