"""unet_fp8.py on the CPU where torch and diffusers are installed: a tiny UNet2DConditionModel of
SDXL's block types (seeded, from a config), its nn.Linear layers swapped for FP8 ones. The right
layers are replaced (counted: those whose in and out features are multiples of 16; the cross
attention's to_k/to_v read a 40-wide text here and stay), convolutions and norms untouched, and
the output is within a stated tolerance of the float32 model's, on the CPU's dequantized path
(fp8_linear.py: the weights rounded to e4m3 with one scale per output channel, the activations
not rounded).

torch and diffusers are no dependency of the CPU build, so in CI these tests are skipped. The GPU's
products (torch._scaled_mm) run in benchmarks/sdxl/device/gpu_scenarios.sh's engine_fp8 phase.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.sdxl.unet_fp8 import provenance, swap_linears

pytestmark = [
    needs_torch,
    pytest.mark.skipif(
        importlib.util.find_spec("diffusers") is None, reason="diffusers is not installed"
    ),
]

CROSS = 40  # the text's width: not a multiple of 16, so attn2's to_k and to_v stay fp32
TINY_UNET: dict[str, Any] = {
    "sample_size": 16,
    "in_channels": 4,
    "out_channels": 4,
    "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
    "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
    "block_out_channels": (32, 64),
    "layers_per_block": 1,
    "norm_num_groups": 16,
    "cross_attention_dim": CROSS,
    "transformer_layers_per_block": (1, 1),
    "attention_head_dim": (2, 4),
    "use_linear_projection": True,
    "addition_embed_type": "text_time",
    "addition_time_embed_dim": 16,
    "projection_class_embeddings_input_dim": 64 + 6 * 16,
}
POOLED = 64
# The output's largest error relative to its largest magnitude: e4m3 rounds each weight by 2^-4 at
# most, through the tiny UNet's layers of seeded random weights (0.026 with torch 2.13's CPU build,
# seeds fixed: the bound leaves room for another torch's summation order, not for a wrong scale).
TOLERANCE = 0.08


def _torch() -> Any:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    return torch


def _unet_and_inputs() -> tuple[Any, dict[str, Any]]:
    torch = _torch()
    from diffusers import UNet2DConditionModel  # type: ignore[import-not-found]  # pants: no-infer-dep

    torch.manual_seed(0)
    unet = UNet2DConditionModel(**TINY_UNET).eval().requires_grad_(False)
    generator = torch.Generator().manual_seed(1)
    inputs = {
        "sample": torch.randn(2, 4, 16, 16, generator=generator),
        "timestep": torch.tensor(500.0),
        "encoder_hidden_states": torch.randn(2, 7, CROSS, generator=generator),
        "added_cond_kwargs": {
            "text_embeds": torch.randn(2, POOLED, generator=generator),
            "time_ids": torch.tensor([[128.0, 128, 0, 0, 128, 128]] * 2),
        },
    }
    return unet, inputs


def _linears(unet: Any) -> dict[str, tuple[int, int]]:
    torch = _torch()
    return {
        name: (module.in_features, module.out_features)
        for name, module in unet.named_modules()
        if isinstance(module, torch.nn.Linear)
    }


def test_the_aligned_linears_are_swapped_and_the_output_stays_close() -> None:
    torch = _torch()
    unet, inputs = _unet_and_inputs()
    before = _linears(unet)
    convolutions = sum(isinstance(m, torch.nn.Conv2d) for m in unet.modules())
    norms = sum(isinstance(m, (torch.nn.GroupNorm, torch.nn.LayerNorm)) for m in unet.modules())
    with torch.no_grad():
        reference = unet(**inputs, return_dict=False)[0]

    count, scaled_mm = swap_linears(torch, unet, torch.device("cpu"))

    after = _linears(unet)
    aligned = {name for name, (i, o) in before.items() if i % 16 == 0 and o % 16 == 0}
    # 4 embedding linears (time, text-time), 8 resnets' time projections, 4 transformers of 12
    # (q, k, v, out twice, GEGLU's proj, the feed-forward's out, proj_in, proj_out) less the
    # cross attention's to_k and to_v of each (40 wide): 4 + 8 + 4 * 10
    assert count == len(aligned) == 4 + 8 + 4 * 10
    assert set(after) == set(before) - aligned  # only the 8 unaligned ones are left nn.Linear
    assert all(name.endswith(("attn2.to_k", "attn2.to_v")) for name in after)
    assert not scaled_mm  # the CPU: every product reads its weights dequantized
    assert sum(isinstance(m, torch.nn.Conv2d) for m in unet.modules()) == convolutions
    assert (
        sum(isinstance(m, (torch.nn.GroupNorm, torch.nn.LayerNorm)) for m in unet.modules())
        == norms
    )
    swapped = dict(unet.named_modules())[
        "down_blocks.1.attentions.0.transformer_blocks.0.attn1.to_q"
    ]
    assert swapped.layer.weight8.dtype == torch.float8_e4m3fn

    with torch.no_grad():
        got = unet(**inputs, return_dict=False)[0]
    error = float((got - reference).abs().max() / reference.abs().max())
    assert 0 < error < TOLERANCE, error  # FP8 changed the numbers, and by little
    assert provenance("fp8", count, scaled_mm) == {
        "unet_precision": "fp8",
        "unet_fp8_layers": "52",
        "unet_fp8_products": "dequantized weights (no FP8 GEMM here)",
    }


def test_an_fp16_unet_keeps_its_dtype_through_the_fp8_layers() -> None:
    torch = _torch()
    unet, inputs = _unet_and_inputs()
    unet = unet.to(torch.float16)
    swap_linears(torch, unet, torch.device("cpu"))
    half = {
        **inputs,
        "sample": inputs["sample"].half(),
        "encoder_hidden_states": inputs["encoder_hidden_states"].half(),
        "added_cond_kwargs": {k: v.half() for k, v in inputs["added_cond_kwargs"].items()},
    }
    with torch.no_grad():
        out = unet(**half, return_dict=False)[0]
    assert out.dtype == torch.float16 and bool(torch.isfinite(out).all())
