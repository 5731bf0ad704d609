"""The linear layers of the torch decoder engines (Llama 2, GPT-J): bf16/fp16 weights, or FP8
(e4m3) weights with one scale per output channel, multiplied by `torch._scaled_mm` with the
activations quantized on the fly (or by a calibrated static scale), where this torch and GPU have
it (Hopper, sm_90; torch 2.5 or later for row-wise scales); elsewhere each product computes with
the FP8 weights converted back, or the tensor-wise forms' arithmetic in float32 (no speed-up), so
the CPU tests run the same code.

Quantizing a weight: scale_n = max |W[n, :]| / 448 (e4m3's largest normal), W8 = W / scale_n in
e4m3. The activations, in one of three forms (`activation_scale`, chosen once per engine):

- "row": x8 = x / scale_m with scale_m = max |x[m, :]| / 448 per row (token), y = (x8 @ W8.T) *
  scale_m * scale_n, which _scaled_mm computes in one kernel (row-wise scales) with the tensor
  cores' fast accumulation. A bias (GPT-J's layers have them) is added in the output dtype after
  the product. The CPU fallback models the weights' quantization only (x is not rounded), which
  is what GPT-J's CPU tests compare against.
- "tensor": one scale for the whole activation, s = max |x| / 448 over every row of the product,
  x8 = x / s; _scaled_mm with two scalar scales (s, and 1 for the weight: cuBLASLt's tensor-wise
  kernel, which read Llama's weights faster than the row-wise one at decode sizes on an H200,
  fp8_linear_bench), then the per-channel weight scale (and the bias, in the same kernel) applied
  to its output. The CPU fallback computes the same arithmetic in float32, the activations rounded
  to e4m3 as on the GPU (e4m3 values and their products are exact in float32: only the order of
  the sums and the GPU's fast accumulation differ), so CPU tests check this form's numerics.
- "static": one scale per product input fixed before the run, s = amax / 448 with amax the
  largest |x| this layer's input reached over calibration samples (`recording` layers collect it,
  `with_static_scale` fixes it), so the product reduces nothing over its activations: x8 =
  e4m3(clamp(x / s, -448, 448)) (a run's value may exceed the calibration maximum: it saturates,
  where the cast alone would give NaN), then the tensor-wise product above, CPU fallback included.
  Only the engines that calibrate (GPT-J's) make this form; "row" and "tensor" need no data
  (ACTIVATION_SCALES, what an engine may switch its layers to without calibration).

Within e4m3's normal range a value's relative rounding (2^-4 at most) does not depend on its scale;
what one scale per tensor changes is where the small values fall: entries below 2^-6 / 448 of the
tensor's largest magnitude (about 1/28,700) land among e4m3's subnormals (fewer significant bits),
those below about 1/460,000 of it round to zero. Row-wise, that is relative to each row's own
largest; tensor-wise, one outlier token coarsens every row of its product (docs/llama2-70b.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from mlperf_harness.errors import HarnessError

E4M3_MAX = 448.0
ACTIVATION_SCALES = ("row", "tensor")  # the forms that need no calibration
STATIC = "static"  # the calibrated form: Linear.with_static_scale


def check_activation_scale(form: str) -> str:
    if form not in ACTIVATION_SCALES:
        raise HarnessError(f"FP8 activation_scale {form!r} is not one of {ACTIVATION_SCALES}")
    return form


def row_quantized(torch: Any, rows: Any) -> tuple[Any, Any]:
    """rows [m, k] -> (e4m3 [m, k], float32 scales [m, 1]), one scale per row."""
    # |x|'s row maximum in float32 by one kernel (abs, max and the cast fused), the scale finished
    # in place, the division promoted to float32: five kernels where eight were, the same numbers
    # (each of a decode step's 320 products pays them, at a few microseconds each)
    amax = torch.linalg.vector_norm(
        rows, ord=float("inf"), dim=-1, keepdim=True, dtype=torch.float32
    )
    scale = amax.clamp_(min=1e-12).div_(E4M3_MAX)
    return (rows / scale).to(torch.float8_e4m3fn), scale


def tensor_quantized(torch: Any, rows: Any) -> tuple[Any, Any]:
    """rows [m, k] -> (e4m3 [m, k], float32 [1, 1]), one scale for all of them (a [1, 1] tensor,
    not 0-d: a 0-d float32 would not promote a bf16 division, which would round x / s to bf16
    before e4m3; _scaled_mm takes any float32 scale of one element as tensor-wise)."""
    amax = torch.linalg.vector_norm(
        rows, ord=float("inf"), dim=(0, 1), keepdim=True, dtype=torch.float32
    )
    scale = amax.clamp_(min=1e-12).div_(E4M3_MAX)
    return (rows / scale).to(torch.float8_e4m3fn), scale


def static_quantized(torch: Any, rows: Any, scale: Any) -> Any:
    """rows [m, k] -> e4m3 [m, k] by a fixed float32 [1, 1] scale: no reduction over the rows;
    clamped to e4m3's range, since a value past the calibration maximum would cast to NaN."""
    return (rows / scale).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def input_amax(torch: Any, x: Any) -> Any:
    """max |x| over every element, a float32 0-d tensor on x's device (no host sync)."""
    return torch.linalg.vector_norm(x, ord=float("inf"), dtype=torch.float32)


def tensorwise_product(torch: Any, x8: Any, scale_a: Any, layer: Linear, dtype: Any) -> Any:
    """y [m, out] in `dtype` = (x8 @ W8.T) * scale_a * scale_n (+ bias): _scaled_mm with scalar
    scales (scale_b the layer's `unit`, a float32 1), the per-channel scale and the bias after it.

    The product's own output is in bf16 where `dtype` is bf16 (or float32 where it is float32),
    else float32: unscaled, it is y / scale_n, and scale_n = max |W[n, :]| / 448 is small for
    small weights (0.02-sized weights: y about 5,000 times too large), past fp16's 65,504 for
    ordinary outputs; bf16 has float32's exponent range, and its rounding (2^-9) is far below
    e4m3's (2^-4), so the multiply by scale_n (float32, in one kernel that upcasts, fused with the
    bias add where there is one) writes `dtype` in place: one extra read and write of the output,
    a few percent of the weight bytes at decode sizes, where float32 would double it."""
    inner = dtype if dtype in (torch.bfloat16, torch.float32) else torch.float32
    if layer.scaled_mm:
        y = torch._scaled_mm(
            x8,
            layer.weight8.t(),  # column-major [in, out], as the kernel wants its second operand
            scale_a=scale_a,
            scale_b=layer.unit,
            out_dtype=inner,
            use_fast_accum=True,  # the tensor cores' partial sums not promoted (the row form's)
        )
    else:  # the same arithmetic in float32 (the CPU's check of this form)
        y = torch.nn.functional.linear(x8.float(), layer.weight8.float()).mul_(scale_a)
    out = y if y.dtype == dtype else torch.empty(y.shape, dtype=dtype, device=y.device)
    if layer.bias is None:
        return torch.mul(y, layer.scale, out=out)
    return torch.addcmul(layer.bias, y, layer.scale, out=out)


@dataclass
class Linear:
    """y = x @ W.T (+ bias) in the layer's form: `weight` [out, in] in the compute dtype, or
    `weight8` [out, in] e4m3 with `scale` [out] float32 (and `unit`, a float32 1 on its device:
    the tensor-wise product's weight scale); `bias` [out] in the compute dtype or None;
    `activation_scale` how its activations are quantized ("row", "tensor" or "static", above),
    `input_scale` the static form's fixed float32 [1, 1] scale; `amax`, where set (a float32 0-d
    tensor: `recording`), takes the maximum of every input's |x| (calibration)."""

    weight: Any = None
    weight8: Any = None
    scale: Any = None
    scaled_mm: bool = False  # torch._scaled_mm usable for this layer
    bias: Any = None
    activation_scale: str = "row"
    unit: Any = None
    input_scale: Any = None
    amax: Any = None

    def __call__(self, torch: Any, x: Any) -> Any:
        if self.amax is not None:  # in place on the device: no host sync per product
            torch.maximum(self.amax, input_amax(torch, x), out=self.amax)
        if self.weight8 is None:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        rows = x.reshape(-1, x.shape[-1])
        if self.activation_scale == STATIC:
            x8 = static_quantized(torch, rows, self.input_scale)
            y = tensorwise_product(torch, x8, self.input_scale, self, x.dtype)
            return y.reshape(*x.shape[:-1], y.shape[-1])
        if self.activation_scale == "tensor":
            x8, scale_a = tensor_quantized(torch, rows)
            y = tensorwise_product(torch, x8, scale_a, self, x.dtype)
            return y.reshape(*x.shape[:-1], y.shape[-1])
        if not self.scaled_mm:
            return torch.nn.functional.linear(x, self.dequantized(torch, x.dtype), self.bias)
        y = self.product(torch, *row_quantized(torch, rows), x.dtype)
        return y.reshape(*x.shape[:-1], y.shape[-1])

    def product(self, torch: Any, x8: Any, scale_a: Any, dtype: Any, with_bias: bool = True) -> Any:
        """y [m, out] in `dtype` from activations already quantized row-wise (e4m3 [m, in] and
        float32 scales [m, 1]: row_quantized, or the Llama engine's fused kernels), the bias added
        unless `with_bias` is False (DLRM-v2's dense part adds it in the next kernel). Without
        _scaled_mm (the CPU) the same arithmetic in float32, the activations' rounding included."""
        if self.scaled_mm:
            y = torch._scaled_mm(
                x8,
                self.weight8.t(),  # column-major [in, out], as the kernel wants its second operand
                scale_a=scale_a,
                scale_b=self.scale[None, :],
                out_dtype=dtype,
                # fast accumulation: the tensor cores' partial sums are not promoted to float32
                # every few steps; on an H200 (fp8_linear_bench) it took Llama-2-70B's decode
                # products at 173 rows from 1.2-1.7 to 1.9-2.1 TB/s of weights, and its
                # prefill-sized ones 5-30%
                use_fast_accum=True,
            )
        else:
            y = torch.nn.functional.linear(
                x8.float() * scale_a, self.weight8.float() * self.scale[:, None]
            ).to(dtype)
        return y if self.bias is None or not with_bias else y + self.bias

    def dequantized(self, torch: Any, dtype: Any) -> Any:
        return (self.weight8.float() * self.scale[:, None]).to(dtype)

    def with_activation_scale(self, form: str) -> Linear:
        """This layer (its tensors shared) with its activations quantized in `form`."""
        check_activation_scale(form)
        return (
            self
            if self.weight8 is None or form == self.activation_scale
            else replace(self, activation_scale=form)
        )

    def recording(self, torch: Any) -> Linear:
        """This layer (its tensors shared) recording its inputs' max |x| into a new `amax`."""
        device = (self.weight if self.weight8 is None else self.weight8).device
        return replace(self, amax=torch.zeros((), dtype=torch.float32, device=device))

    def with_static_scale(self, torch: Any, amax: float) -> Linear:
        """This FP8 layer (its tensors shared) with static activations: scale amax / 448, from
        the calibration maximum `amax` of its input (one that was all zero: amax taken as 1e-12)."""
        if self.weight8 is None:
            raise HarnessError("static activation scales are for FP8 layers only")
        if not (amax >= 0 and amax < float("inf")):
            raise HarnessError(f"an activation maximum must be finite and >= 0, not {amax}")
        scale = torch.full(
            (1, 1), max(amax, 1e-12) / E4M3_MAX, dtype=torch.float32, device=self.weight8.device
        )
        return replace(self, activation_scale=STATIC, input_scale=scale, amax=None)


def quantize(
    torch: Any, weight: Any, scaled_mm: bool, bias: Any = None, activation_scale: str = "row"
) -> Linear:
    """An FP8 layer of `weight` [out, in] (any float dtype on the device): per-channel scales."""
    amax = weight.abs().amax(dim=1).float().clamp(min=1e-12)
    scale = amax / E4M3_MAX
    weight8 = (weight.float() / scale[:, None]).to(torch.float8_e4m3fn)
    unit = torch.ones((), dtype=torch.float32, device=weight.device)
    return Linear(
        weight8=weight8, scale=scale, scaled_mm=scaled_mm, bias=bias,
        activation_scale=check_activation_scale(activation_scale), unit=unit,
    )  # fmt: skip


def scaled_mm_unavailable(
    torch: Any, device: Any, dtype: Any = None, form: str = "row"
) -> str | None:
    """Why FP8 GEMMs do not run here (None: they do): they need a CUDA device of compute
    capability 9.0 or more and a torch with _scaled_mm; checked by one small product in the
    activation form `form` with output in `dtype` (default bf16; some torch versions give
    row-wise scales bf16 only). One form at a time: a torch that lacks one keeps the other."""
    if getattr(device, "type", str(device)) != "cuda" or not hasattr(torch, "_scaled_mm"):
        return "not a CUDA device, or a torch without torch._scaled_mm"
    if torch.cuda.get_device_capability(device) < (9, 0):
        return f"compute capability {torch.cuda.get_device_capability(device)} < (9, 0)"
    try:
        dtype = torch.bfloat16 if dtype is None else dtype
        probe = quantize(torch, torch.ones(32, 32, device=device, dtype=dtype), True, None, form)
        probe(torch, torch.ones(16, 32, device=device, dtype=dtype))
    except (RuntimeError, TypeError, ValueError) as error:  # newer torch: ValueError
        return f"a probe product failed: {str(error).splitlines()[0][:200]}"
    return None


def fp8_layers(torch: Any, device: Any, dtype: Any, engine: str) -> Callable[..., Linear]:
    """What makes an engine's FP8 layers on `device` with activations in `dtype`: `make(weight,
    bias=None)`, row-wise activations (an engine may turn its layers tensor-wise:
    `Linear.with_activation_scale`). The probe runs once; where it fails every product reads its
    weight dequantized, and a line on stderr says so (the run's speed then is no FP8 figure)."""
    why_not = scaled_mm_unavailable(torch, device, dtype)
    if why_not is None:
        print(f"{engine}: FP8 products by torch._scaled_mm", file=sys.stderr)
    else:
        print(f"{engine}: FP8 weights dequantized for every product ({why_not})", file=sys.stderr)

    def make(weight: Any, bias: Any = None) -> Linear:
        return quantize(torch, weight, why_not is None, bias)

    return make
