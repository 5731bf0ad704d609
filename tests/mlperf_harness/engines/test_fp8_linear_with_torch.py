"""engines/fp8_linear.py's tensor-wise activation form on the CPU where torch is installed: its CPU
arithmetic equals a NumPy reference of the same quantization (ml_dtypes' e4m3); through this torch's
own torch._scaled_mm (on the CPU, where it has one) it gives the CPU arithmetic's numbers, with and
without a bias, in float32, bf16 and fp16 (fp16 through a float32 intermediate: the unscaled
product overflows fp16 where weights are small); and one outlier row coarsens the other rows only
once they fall below e4m3's normal range relative to it (the row form: never).

torch is no dependency of the CPU build, so in CI these tests are skipped. The GPU's kernel
(cuBLASLt's tensor-wise FP8 GEMM) runs in the Llama profile (benchmarks/llama2-70b/device).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.engines.fp8_linear import (
    E4M3_MAX,
    Linear,
    quantize,
    row_quantized,
    tensor_quantized,
)
from mlperf_harness.engines.torch_fp8.scales import round_to_e4m3
from mlperf_harness.errors import HarnessError

pytestmark = needs_torch


def _torch() -> Any:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    return torch


def _layer_and_input(rows: int = 6) -> tuple[Any, Any]:
    torch = _torch()
    generator = torch.Generator().manual_seed(5)
    weight = torch.randn(48, 64, generator=generator) * torch.linspace(0.01, 10, 48)[:, None]
    x = torch.randn(rows, 64, generator=generator) * torch.linspace(0.1, 3, rows)[:, None]
    return weight, x


def _scaled_mm_or_skip(layer: Linear, x: Any) -> Any:
    try:
        return layer(_torch(), x)
    except (RuntimeError, NotImplementedError, ValueError) as error:
        pytest.skip(f"this torch has no CPU torch._scaled_mm with tensor-wise scales: {error}")


def test_tensor_form_on_the_cpu_is_numpys_quantization() -> None:
    torch = _torch()
    weight, x = _layer_and_input()
    layer = quantize(torch, weight, False, activation_scale="tensor")
    got = layer(torch, x).numpy()
    w, a = weight.numpy(), x.numpy()
    scale_n = np.abs(w).max(axis=1) / np.float32(E4M3_MAX)
    w8 = round_to_e4m3(w / scale_n[:, None])
    scale = np.abs(a).max() / np.float32(E4M3_MAX)
    expected = (round_to_e4m3(a / scale) @ w8.T) * scale * scale_n
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    # and it is not the weights-only model: the activations were rounded too
    assert not np.allclose(got, a @ (w8 * scale_n[:, None]).T, rtol=1e-4, atol=0)


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_tensor_form_through_scaled_mm_gives_the_cpu_arithmetic(
    dtype_name: str, with_bias: bool
) -> None:
    torch = _torch()
    dtype = getattr(torch, dtype_name)
    weight, x = _layer_and_input()
    bias = torch.linspace(-1, 1, 48).to(dtype) if with_bias else None
    fast = quantize(torch, weight.to(dtype), True, bias, activation_scale="tensor")
    got = _scaled_mm_or_skip(fast, x.to(dtype))
    slow = quantize(torch, weight.to(dtype), False, bias, activation_scale="tensor")
    expected = slow(torch, x.to(dtype))
    assert got.dtype == dtype == expected.dtype
    # float32: the sums' order alone; bf16/fp16: the product's own output rounded (this CPU
    # kernel's bf16 output measured 0.7% of the largest value off)
    tolerance = {"float32": 1e-5, "bfloat16": 0.02, "float16": 2e-3}[dtype_name]
    scale = float(expected.float().abs().max())
    assert float((got.float() - expected.float()).abs().max()) <= tolerance * scale


def test_fp16_output_goes_through_float32_where_the_unscaled_product_overflows() -> None:
    """All-equal inputs: x8 and w8 all 448, so the unscaled product is 448 x 256 = 114,688 (over
    fp16's 65,504) while y is 0.256."""
    torch = _torch()
    x = torch.ones(4, 256, dtype=torch.float16)
    weight = torch.full((16, 256), 1e-3, dtype=torch.float16)
    for scaled_mm in (False, True):
        layer = quantize(torch, weight, scaled_mm, activation_scale="tensor")
        y = layer(torch, x) if not scaled_mm else _scaled_mm_or_skip(layer, x)
        assert y.dtype == torch.float16
        assert torch.allclose(y.float(), torch.full((4, 16), 0.256), rtol=2e-3)


def _error_of_other_rows(form: str, outlier: float) -> float:
    """The relative error of rows 1.. of a product whose row 0 is `outlier` times the others' size,
    against the same weights (dequantized) with the activations unrounded: the activations' part."""
    torch = _torch()
    weight, x = _layer_and_input(8)
    x[0] *= outlier
    layer = quantize(torch, weight, False, activation_scale=form)
    exact = torch.nn.functional.linear(x, layer.dequantized(torch, torch.float32))
    quantized = row_quantized if form == "row" else tensor_quantized
    x8, scale = quantized(torch, x)
    got = torch.nn.functional.linear(x8.float() * scale, layer.dequantized(torch, torch.float32))
    if form == "tensor":  # the layer's own arithmetic (the order differs: float32's rounding)
        assert torch.allclose(layer(torch, x), got, rtol=1e-4, atol=1e-4 * float(got.abs().max()))
    return float((got[1:] - exact[1:]).norm() / exact[1:].norm())


def test_one_outlier_row_coarsens_the_others_past_e4m3s_normal_range() -> None:
    """Within e4m3's normal range (2^-6 .. 448 after the scale) a value rounds to 2^-4 of itself
    whatever the scale: row 0 scaled up 16 or 1,000 times changes the other rows' error little;
    2^18 times (its largest tens of thousands of times the others' typical size) puts them among the
    subnormals, and 2^22 times rounds most of them to zero. Row-wise scales keep each row's own.
    Measured (the activations' share of the error of rows 1..7): row 2.2% throughout; tensor
    2.4%, 2.4%, 2.6%, 5.1%, 65%."""
    factors = (1, 16, 1000, 2**18, 2**22)
    row = [_error_of_other_rows("row", f) for f in factors]
    tensor = [_error_of_other_rows("tensor", f) for f in factors]
    assert max(row) < 0.03 and max(row) - min(row) < 1e-6  # row 0 leaves the others alone
    assert max(tensor[:3]) < 0.03
    assert tensor[3] > 1.5 * tensor[0]
    assert tensor[4] > 0.5


def test_a_form_that_is_neither_is_refused_in_one_line() -> None:
    torch = _torch()
    weight, _ = _layer_and_input()
    with pytest.raises(HarnessError, match="activation_scale 'block' is not one of") as error:
        quantize(torch, weight, False, activation_scale="block")
    assert "\n" not in str(error.value)
    layer = quantize(torch, weight, False)
    assert layer.with_activation_scale("row") is layer
    tensor = layer.with_activation_scale("tensor")
    assert tensor.activation_scale == "tensor" and tensor.weight8 is layer.weight8
    assert Linear(weight=weight).with_activation_scale("tensor").activation_scale == "row"


def test_the_bench_times_the_tensor_form_as_linear_computes_it() -> None:
    """fp8_linear_bench's forms run here on the CPU (this torch's own _scaled_mm, where it has
    one): its "fp8 tensor fast" is the layer's tensor-wise product, the output scaled per channel."""
    torch = _torch()
    from mlperf_harness.engines.fp8_linear_bench import FORMS, QUANTIZATIONS, products, table

    work = products(torch, 16, 64, 48, device="cpu")
    assert set(work) == {*FORMS, *QUANTIZATIONS}
    try:
        outputs = {name: run() for name, run in work.items()}
    except (RuntimeError, NotImplementedError, ValueError) as error:
        pytest.skip(f"this torch has no CPU torch._scaled_mm for every form: {error}")
    x8, scale = outputs["q tensor"]
    assert scale.shape == (1, 1) and x8.dtype == torch.float8_e4m3fn
    assert outputs["fp8 tensor fast"].dtype == torch.bfloat16
    assert outputs["fp8 tensor fast"].shape == (16, 48)
    record = {"model": "llama2-70b", "layer": "o", "k": 8192, "n": 8192, "rows": 173}
    record["us"] = {"bf16": 40.6, "fp8 rowwise fast": 34.8, "fp8 tensor fast": 30.0, "q row": 5.0}
    lines = table([record])
    assert len(lines) == 2 and "1.93TB/s" in lines[1] and lines[1].rstrip().endswith("-")
