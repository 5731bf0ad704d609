"""SDXL's UNet with FP8 products (`--precision fp8` on the torch backend): each nn.Linear of the UNet
whose in and out features are multiples of 16 (what torch._scaled_mm takes: the attention's
to_q/to_k/to_v/to_out, the feed-forward projections, proj_in/proj_out, the time and text-time
embeddings' linears) is replaced, once at load and before any CUDA graph is captured, by a module
that runs our shared FP8 layer (engines/fp8_linear.py: e4m3 weights with one scale per output
channel, the activations scaled per row on the fly by torch._scaled_mm on Hopper; elsewhere the
weights dequantized for every product, with a line on stderr). Convolutions, norms, the text
encoders and the VAE stay as they are.

The precision check is torch-free: a run refuses another precision before any GPU is touched.
"""

from __future__ import annotations

import functools
from typing import Any

from mlperf_harness.engines.fp8_linear import Linear, fp8_layers
from mlperf_harness.errors import HarnessError

FP16, FP8 = "fp16", "fp8"
TORCH_PRECISIONS = (FP16, FP8)
ALIGNMENT = 16  # torch._scaled_mm's operands: both dimensions multiples of 16
ENGINE = "sdxl unet"


def check_precision(precision: str | None) -> str:
    """The UNet's precision on the torch backend (fp16 where none is set), or one line."""
    chosen = precision or FP16
    if chosen not in TORCH_PRECISIONS:
        raise HarnessError(
            f"SDXL's torch backend runs its UNet in {' or '.join(TORCH_PRECISIONS)}, not "
            f"--precision {chosen} (the GPU configs' fp16: pass --precision fp16 or fp8)"
        )
    return chosen


def qualifies(layer: Any) -> bool:
    return bool(layer.in_features % ALIGNMENT == 0 and layer.out_features % ALIGNMENT == 0)


@functools.cache
def _module_class(torch: Any) -> Any:
    class Fp8Linear(torch.nn.Module):  # type: ignore[misc]
        """`layer` (an FP8 Linear) on inputs cast to `dtype`, its output cast back to the
        input's dtype (no-op casts where they match, as in the fp16 UNet)."""

        def __init__(self, layer: Linear, dtype: Any) -> None:
            super().__init__()
            self.layer = layer
            self.compute_dtype = dtype
            self.in_features = int(layer.weight8.shape[1])
            self.out_features = int(layer.weight8.shape[0])

        def forward(self, x: Any) -> Any:
            return self.layer(torch, x.to(self.compute_dtype)).to(x.dtype)

        def extra_repr(self) -> str:
            products = "torch._scaled_mm" if self.layer.scaled_mm else "dequantized"
            return f"in={self.in_features}, out={self.out_features}, fp8 e4m3, {products}"

    return Fp8Linear


def fp8_module(torch: Any, layer: Linear, dtype: Any) -> Any:
    """An nn.Module in place of an nn.Linear, computing the FP8 `layer`."""
    return _module_class(torch)(layer, dtype)


def fp8_maker(torch: Any, device: Any) -> tuple[Any, Any]:
    """(make(weight, bias), compute dtype) for the UNet's layers on `device`: fp16 activations
    where _scaled_mm takes them with row-wise scales; else, on a GPU whose torch gives those in
    bf16 only, bf16 around each product (the rest of the UNet stays fp16); else fp16 and the
    dequantized products (fp8_linear prints which, on stderr)."""
    make = fp8_layers(torch, device, torch.float16, ENGINE)
    if getattr(device, "type", str(device)) != "cuda" or _probe(torch, make, device).scaled_mm:
        return make, torch.float16
    make_bf16 = fp8_layers(torch, device, torch.bfloat16, ENGINE + " (bf16 products)")
    if _probe(torch, make_bf16, device).scaled_mm:
        return make_bf16, torch.bfloat16
    return make, torch.float16


def _probe(torch: Any, make: Any, device: Any) -> Linear:
    layer: Linear = make(torch.ones(ALIGNMENT, ALIGNMENT, device=device))
    return layer


def swap_linears(torch: Any, model: Any, device: Any) -> tuple[int, bool]:
    """Replace `model`'s qualifying nn.Linear layers by FP8 ones in place: (how many, whether
    their products run on torch._scaled_mm). Each layer's fp16 weight is freed as it goes."""
    make, dtype = fp8_maker(torch, device)
    targets = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if isinstance(child, torch.nn.Linear) and qualifies(child)
    ]
    scaled_mm = False
    with torch.no_grad():
        for parent, name, child in targets:
            bias = None if child.bias is None else child.bias.detach().to(dtype)
            layer: Linear = make(child.weight.detach(), bias)
            scaled_mm = layer.scaled_mm
            setattr(parent, name, fp8_module(torch, layer, dtype))
    return len(targets), scaled_mm


def provenance(precision: str, layers: int | None, scaled_mm: bool) -> dict[str, str]:
    """What result.json says of the UNet's precision (layers None: fp16, no swap)."""
    record = {"unet_precision": precision}
    if precision == FP8:
        record["unet_fp8_layers"] = str(layers)
        record["unet_fp8_products"] = (
            "torch._scaled_mm" if scaled_mm else "dequantized weights (no FP8 GEMM here)"
        )
    return record
