"""The linear layers of the torch decoder engines (Llama 2, GPT-J): bf16/fp16 weights, or FP8
(e4m3) weights with one scale per output channel, multiplied by `torch._scaled_mm` with the
activations quantized per row (token) on the fly, where this torch and GPU have it (Hopper, sm_90;
torch 2.5 or later for row-wise scales); elsewhere the FP8 weights are dequantized to the compute
dtype for each product (same numbers, no speed-up), so the CPU tests run the same code.

Quantizing a weight: scale_n = max |W[n, :]| / 448 (e4m3's largest normal), W8 = W / scale_n in
e4m3. A product: x8 = x / scale_m (scale_m = max |x[m, :]| / 448 per row), y = (x8 @ W8.T) *
scale_m * scale_n, which _scaled_mm computes in one kernel with the tensor cores' fast accumulation. A bias
(GPT-J's layers have them) is added in the output dtype after the product.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

E4M3_MAX = 448.0


@dataclass
class Linear:
    """y = x @ W.T (+ bias) in the layer's form: `weight` [out, in] in the compute dtype, or
    `weight8` [out, in] e4m3 with `scale` [out] float32; `bias` [out] in the compute dtype or None."""

    weight: Any = None
    weight8: Any = None
    scale: Any = None
    scaled_mm: bool = False  # torch._scaled_mm usable for this layer
    bias: Any = None

    def __call__(self, torch: Any, x: Any) -> Any:
        if self.weight8 is None:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        if not self.scaled_mm:
            return torch.nn.functional.linear(x, self.dequantized(torch, x.dtype), self.bias)
        rows = x.reshape(-1, x.shape[-1])
        # |x|'s row maximum in float32 by one kernel (abs, max and the cast fused), the scale
        # finished in place, the division promoted to float32: five kernels where eight were,
        # the same numbers (each of a decode step's 320 products pays them, at a few microseconds
        # each)
        amax = torch.linalg.vector_norm(
            rows, ord=float("inf"), dim=-1, keepdim=True, dtype=torch.float32
        )
        scale_a = amax.clamp_(min=1e-12).div_(E4M3_MAX)
        x8 = (rows / scale_a).to(torch.float8_e4m3fn)
        y = torch._scaled_mm(
            x8,
            self.weight8.t(),  # column-major [in, out], as the kernel wants its second operand
            scale_a=scale_a,
            scale_b=self.scale[None, :],
            out_dtype=x.dtype,
            # fast accumulation: the tensor cores' partial sums are not promoted to float32 every
            # few steps; on an H200 (fp8_linear_bench) it took Llama-2-70B's decode products at
            # 173 rows from 1.2-1.7 to 1.9-2.1 TB/s of weights, and its prefill-sized ones 5-30%
            use_fast_accum=True,
        )
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], y.shape[-1])

    def dequantized(self, torch: Any, dtype: Any) -> Any:
        return (self.weight8.float() * self.scale[:, None]).to(dtype)


def quantize(torch: Any, weight: Any, scaled_mm: bool, bias: Any = None) -> Linear:
    """An FP8 layer of `weight` [out, in] (any float dtype on the device): per-channel scales."""
    amax = weight.abs().amax(dim=1).float().clamp(min=1e-12)
    scale = amax / E4M3_MAX
    weight8 = (weight.float() / scale[:, None]).to(torch.float8_e4m3fn)
    return Linear(weight8=weight8, scale=scale, scaled_mm=scaled_mm, bias=bias)


def scaled_mm_unavailable(torch: Any, device: Any, dtype: Any = None) -> str | None:
    """Why FP8 GEMMs with row-wise scales do not run here (None: they do): they need a CUDA device
    of compute capability 9.0 or more and a torch with _scaled_mm; checked by one small product
    with output in `dtype` (default bf16; some torch versions give row-wise scales bf16 only)."""
    if getattr(device, "type", str(device)) != "cuda" or not hasattr(torch, "_scaled_mm"):
        return "not a CUDA device, or a torch without torch._scaled_mm"
    if torch.cuda.get_device_capability(device) < (9, 0):
        return f"compute capability {torch.cuda.get_device_capability(device)} < (9, 0)"
    try:
        dtype = torch.bfloat16 if dtype is None else dtype
        probe = quantize(torch, torch.ones(32, 32, device=device, dtype=dtype), True)
        probe(torch, torch.ones(16, 32, device=device, dtype=dtype))
    except (RuntimeError, TypeError, ValueError) as error:  # newer torch: ValueError
        return f"a probe product failed: {str(error).splitlines()[0][:200]}"
    return None


def fp8_layers(torch: Any, device: Any, dtype: Any, engine: str) -> Callable[..., Linear]:
    """What makes an engine's FP8 layers on `device` with activations in `dtype`: `make(weight,
    bias=None)`. The probe runs once; where it fails every product reads its weight dequantized,
    and a line on stderr says so (the run's speed then is no FP8 figure)."""
    why_not = scaled_mm_unavailable(torch, device, dtype)
    if why_not is None:
        print(f"{engine}: FP8 products by torch._scaled_mm (row-wise scales)", file=sys.stderr)
    else:
        print(f"{engine}: FP8 weights dequantized for every product ({why_not})", file=sys.stderr)

    def make(weight: Any, bias: Any = None) -> Linear:
        return quantize(torch, weight, why_not is None, bias)

    return make
