"""Run under TRITON_INTERPRET=1 by test_llama_fused_inputs.py (a process of its own: Triton reads
that variable when the kernels are defined): the torch Llama engine's fused input kernels
(fused_kernels.py) on the CPU against their torch reference (elementwise.py) on awkward widths and
each dtype; with the argument `engine`, a tiny Llama with FP8 weights decoding greedily with
fused=1 (the kernels interpreted) to the tokens of the same engine on the reference. Prints one
line per check and exits non-zero when one fails."""

from __future__ import annotations

import sys
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
from triton_interpreter import exact_float_casts

from mlperf_harness.engines.torch_llama import elementwise, fused_kernels

EPS = 1e-5
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# widths: under one chunk, not a multiple of it, several chunks (fp8_row_kernels.CHUNK = 1024)
WIDTHS = (48, 1000, 2500)


def close(label: str, got: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    """Scales equal to float32 rounding (rsqrt's and the sums' order may move a normalised value by
    a bit of its dtype, and with it the row's largest); e4m3 bytes equal but for a rare one that
    rounds the other way (never more than one e4m3 step apart, dequantized)."""
    q, scale = got[-2:]
    q_want, scale_want = want[-2:]
    scale_error = float(((scale - scale_want).abs() / scale_want).max())
    values, values_want = q.float() * scale, q_want.float() * scale_want
    step = values_want.abs().clamp(min=float(scale_want.min()) * 2**-6) / 8  # e4m3: 3 bits
    worst = float(((values - values_want).abs() / step).max())
    same = float((q.view(torch.uint8) == q_want.view(torch.uint8)).float().mean())
    extra = [bool(torch.equal(g, w)) for g, w in zip(got[:-2], want[:-2], strict=True)]
    ok = scale_error < 1e-5 and worst <= 1.0 + 1e-6 and same >= 0.999 and all(extra)
    verdict = "equal to the reference" if ok else "DIFFER"
    print(
        f"{label}: {verdict} (bytes equal {same:.4f}, worst {worst:.2f} e4m3 steps, scales "
        f"{scale_error:.1e}{', residual equal' if extra and all(extra) else ''})"
    )
    return ok


def kernels() -> bool:
    ok = True
    generator = torch.Generator().manual_seed(0)
    for name, dtype in DTYPES.items():
        for width in WIDTHS:
            x = (torch.randn(5, width, generator=generator) * 3).to(dtype)
            delta = torch.randn(5, width, generator=generator).to(dtype)
            weight = (torch.rand(width, generator=generator) + 0.5).to(dtype)
            x[1, 7] = 200.0  # an outlier: its row's scale is set by it
            x[2] = 0.0  # an all-zero row: the smallest scale, every byte 0
            gate_up = (torch.randn(5, 2 * width, generator=generator) * 2).to(dtype)
            checks = {
                "norm": (
                    fused_kernels.norm_quantized(torch, x, weight, EPS),
                    elementwise.norm_quantized(torch, x, weight, EPS),
                ),
                "add+norm": (
                    fused_kernels.add_norm_quantized(torch, x, delta, weight, EPS),
                    elementwise.add_norm_quantized(torch, x, delta, weight, EPS),
                ),
                "swiglu": (
                    fused_kernels.swiglu_quantized(torch, gate_up),
                    elementwise.swiglu_quantized(torch, gate_up),
                ),
                "quantize": (fused_kernels.quantized(torch, x), elementwise.quantized(torch, x)),
            }
            for what, (got, want) in checks.items():
                ok &= close(f"{what} {name} width {width}", got, want)
        ok &= rotary(name, dtype, generator)
    return ok


def rotary(name: str, dtype: Any, generator: Any) -> bool:
    """The rotary kernel on the engine's view of its q/k/v product (q and k heads of a wider
    row): the tiny Llama's 8 + 2 heads of 8 and Llama-2-70B's 64 + 8 of 128 (5 programs of 16
    heads a token, the last part empty), every element equal to the reference's."""
    ok = True
    for heads, kv_heads, dim in ((8, 2, 8), (64, 8, 128)):
        tokens = 3
        qkv = (torch.randn(tokens, (heads + 2 * kv_heads) * dim, generator=generator) * 4).to(dtype)
        qk = qkv[:, : (heads + kv_heads) * dim].reshape(tokens, heads + kv_heads, dim)
        angles = torch.rand(tokens, 1, dim // 2, generator=generator) * 300
        cos, sin = angles.cos(), angles.sin()
        same = torch.equal(
            fused_kernels.rotated(torch, qk, cos, sin), elementwise.rotated(torch, qk, cos, sin)
        )
        verdict = "equal to the reference" if same else "DIFFER"
        print(f"rotary {name} {heads}+{kv_heads} heads of {dim}: {verdict}")
        ok &= same
    return ok


def engine() -> bool:
    """A tiny Llama with FP8 weights (the CPU's float32 arithmetic of their products), greedy with
    fused=1 (packed prefills, eager steps; the attention gqa, not interpreted, to keep it short):
    the fused kernels (interpreted) against the engine on their torch reference, the same
    tokens."""
    import tiny_llama_engine

    from mlperf_harness.engines.torch_llama import engine as engine_module
    from mlperf_harness.engines.torch_llama.options import EngineOptions
    from mlperf_harness.generation.scheduler import generate

    prompts, configs = tiny_llama_engine.workload()
    options = EngineOptions(attention="gqa", graphs=False, fused=True, prefill_tokens=24)
    tokens = {}
    original = engine_module.fused_inputs
    for label, inputs in (("kernels", fused_kernels), ("reference", elementwise)):

        def chosen(device: Any, inputs: Any = inputs) -> Any:
            return inputs

        engine_module.fused_inputs = chosen
        try:
            engine = tiny_llama_engine.engine(3, options, fp8="fallback")
            tokens[label] = generate(engine, prompts, configs)
        finally:
            engine_module.fused_inputs = original
    same = sum(a == b for a, b in zip(tokens["kernels"], tokens["reference"], strict=True))
    ok = same == len(prompts)
    print(f"engine fused=1: {same} of {len(prompts)} prompts {'equal' if ok else 'DIFFER'}")
    return ok


if __name__ == "__main__":
    exact_float_casts()
    passed = engine() if sys.argv[1:] == ["engine"] else kernels()
    sys.exit(0 if passed else 1)
