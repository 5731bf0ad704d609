"""A Llama block's per-element steps as torch computes them from its own kernels: RMSNorm, the
rotary embedding, and the FP8 products' inputs quantized row-wise (fp8_linear.row_quantized):
RMSNorm's output (after the residual add, where there is one), SiLU(gate) x up, the output
projection's input. options.py's `fused` takes these from fused_kernels.py instead (the same
functions, one Triton kernel each) where Triton runs; these are their reference, and what `fused`
runs on a CPU without Triton. The quantizing ones return e4m3 [rows, width] and float32 scales
[rows, 1] for fp8_linear.Linear.product."""

from __future__ import annotations

from typing import Any

from mlperf_harness.engines.fp8_linear import row_quantized


def rms_norm(torch: Any, x: Any, weight: Any, eps: float) -> Any:
    """Llama's RMSNorm in float32, the result in x's dtype (Hugging Face's LlamaRMSNorm)."""
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weight.float()).to(x.dtype)


def rotated(torch: Any, x: Any, cos: Any, sin: Any) -> Any:
    """rotate_half rotary of x [tokens, heads, head_dim] by cos and sin [tokens, 1, head_dim / 2]
    (float32), computed in float32, the result in x's dtype."""
    half = x.shape[-1] // 2
    a, b = x[..., :half].float(), x[..., half:].float()
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1).to(x.dtype)


def norm_quantized(torch: Any, x: Any, weight: Any, eps: float) -> tuple[Any, Any]:
    return row_quantized(torch, rms_norm(torch, x, weight, eps))


def add_norm_quantized(
    torch: Any, x: Any, delta: Any, weight: Any, eps: float
) -> tuple[Any, Any, Any]:
    """x + delta (the next residual stream), and RMSNorm of it quantized."""
    total = x + delta
    return (total, *norm_quantized(torch, total, weight, eps))


def swiglu_quantized(torch: Any, gate_up: Any) -> tuple[Any, Any]:
    """SiLU(gate) x up of gate_up [rows, 2 inner] (gate first), quantized."""
    gate, up = gate_up.chunk(2, dim=-1)
    return row_quantized(torch, torch.nn.functional.silu(gate) * up)


def quantized(torch: Any, x: Any) -> tuple[Any, Any]:
    return row_quantized(torch, x)
