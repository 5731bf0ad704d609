"""GPT-J's torch engine in fp8 (FP8 e4m3 projection weights, one scale per output channel) on the
CPU where torch is installed. There torch._scaled_mm does not run (it needs Hopper): every product
reads its FP8 weight dequantized, so these tests check the quantization and the engine around it,
not the GPU kernel (benchmarks/gptj/device/engine.sh does, on a GPU).

- the layers: a scale per output channel, each weight within half an e4m3 step, the embedding,
  LayerNorms and lm_head not quantized; the official checkpoint's loader is checked in fp8 by
  test_gptj_checkpoint_loader_with_torch.py, the real-size seeded model here at a small size;
- exactness: FP8 weights with float32 activations decode, greedy and beam 4, exactly as the NumPy
  reference beam search over the dequantized weights (the engine computes the quantized model);
- agreement on a tiny seeded GPT-J: the fp8 engine's logits differ from the fp32 engine's by the
  quantization's own error (the fp32 engine over the dequantized weights) plus fp16's, no more.
The fitted stand-in's ROUGE through fp16, fp8 and fp8 with static activation scales against the
fp32 engine's: test_gptj_static_fp8_with_torch.py (slow).

torch is no dependency of the CPU build, so in CI these tests are skipped.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.gptj.decoding import beam_search, gptj_config
from mlperf_harness.benchmarks.gptj.session import NumpyGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import (
    Float32Array,
    GptjShape,
    random_weights,
)
from mlperf_harness.engines.fp8_linear import E4M3_MAX, quantize
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.module import (
    TorchGptj,
    from_tensors,
    from_weights,
    numpy_tensors,
    random_gptj,
)
from mlperf_harness.generation.scheduler import generate

pytestmark = needs_torch
SHAPE = GptjShape(layers=2, hidden=64, heads=4, rotary_dim=8, vocab_size=97, inner=96)
EOS = 5
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj", "fc_in", "fc_out")


def _torch() -> Any:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    return torch


def _prompts(count: int) -> list[Any]:
    rng = np.random.default_rng(7)
    return [rng.integers(0, SHAPE.vocab_size, n) for n in rng.integers(1, 30, count)]


def _dequantized(weights: dict[str, Float32Array]) -> dict[str, Float32Array]:
    """The weights the fp8 engine computes with: each projection quantized per output channel
    (a stacked layer's rows keep their own scales: stacking changes nothing) and read back."""
    torch = _torch()
    out = dict(weights)
    for name, value in weights.items():
        if name.endswith(".weight") and any(f".{p}." in name for p in PROJECTIONS):
            layer = quantize(torch, torch.from_numpy(value), False)
            out[name] = layer.dequantized(torch, torch.float32).numpy()
    return out


def _fp8_in_fp32(weights: dict[str, Float32Array]) -> TorchGptj:
    """FP8 projections with float32 activations: the quantization alone, no fp16 rounding."""
    torch = _torch()
    cpu = torch.device("cpu")

    def fp8(weight: Any, bias: Any = None) -> Any:
        return quantize(torch, weight, False, bias)

    tensor = numpy_tensors(torch, weights, SHAPE, cpu, torch.float32)
    return from_tensors(torch, tensor, SHAPE, fp8, torch.float32)


def _engine(model: TorchGptj, slots: int, beams: int, max_new: int) -> TorchGptjEngine:
    return TorchGptjEngine(model, CacheLayout(slots, beams, 32, max_new), EOS)


def _model(weights: dict[str, Float32Array], precision: str) -> TorchGptj:
    torch = _torch()
    return from_weights(torch, weights, SHAPE, torch.device("cpu"), precision)


def test_projections_are_fp8_with_a_scale_per_output_channel() -> None:
    torch = _torch()
    model = _model(random_weights(SHAPE, seed=2), "fp8")
    assert model.dtype == torch.float16  # activations, cache, embedding, LayerNorms
    assert model.lm_head.dtype == torch.float16 and model.wte.dtype == torch.float16
    for block in model.blocks:
        assert block.ln[0].dtype == torch.float16
        for layer in (block.qkv_in, block.out, block.fc_out):
            assert layer.weight is None and layer.weight8.dtype == torch.float8_e4m3fn
            assert layer.scale.shape == (layer.weight8.shape[0],)
        assert block.qkv_in.bias.dtype == torch.float16 and block.out.bias is None
    weight = torch.from_numpy(random_weights(SHAPE, seed=2)["transformer.h.0.mlp.fc_in.weight"])
    layer = quantize(torch, weight, False)
    assert torch.allclose(layer.scale, weight.abs().amax(dim=1) / E4M3_MAX)
    back = layer.dequantized(torch, torch.float32)
    # each row's largest |weight| is e4m3's largest value (back up to float32's rounding of the
    # scale); every weight within half an e4m3 step: 2^-4 of its magnitude for normal values,
    # 2^-10 of the scale below them (subnormals)
    rows = torch.arange(weight.shape[0])
    largest = weight.abs().argmax(dim=1)
    assert torch.equal(layer.weight8[rows, largest].float().abs(), torch.full_like(rows, 448.0))
    assert torch.allclose(back[rows, largest], weight[rows, largest], rtol=1e-6, atol=0)
    bound = torch.maximum(weight.abs() * 2**-4, layer.scale[:, None] * 2**-10)
    assert bool(((back - weight).abs() <= bound * (1 + 1e-6)).all())


@pytest.mark.parametrize("beams", [1, 4])
def test_fp8_weights_decode_as_the_reference_over_the_dequantized_weights(beams: int) -> None:
    weights = random_weights(SHAPE, seed=3)
    weights["lm_head.bias"][EOS] += 2.0  # EOS sometimes
    config = replace(gptj_config(EOS), num_beams=beams, min_new_tokens=3, max_new_tokens=16)
    prompts = _prompts(7)
    got = generate(_engine(_fp8_in_fp32(weights), 3, beams, 16), prompts, config)
    reference = NumpyGptj(_dequantized(weights), SHAPE)
    assert got == [beam_search(reference, p, config) for p in prompts]


def _prefill_logits(model: TorchGptj, prompts: list[Any]) -> Float32Array:
    engine = _engine(model, len(prompts), 1, 4)
    engine.prefill(list(range(len(prompts))), prompts)
    return np.asarray(engine.held.numpy(), np.float32).copy()


def _relative(a: Float32Array, b: Float32Array) -> float:
    """|a - b| over the spread of b's logits (their mean per row removed: softmax ignores it)."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b - b.mean(axis=1, keepdims=True)))


def test_fp8_logits_err_by_the_quantization_and_fp16_alone() -> None:
    weights = random_weights(SHAPE, seed=3)
    dequantized = _dequantized(weights)
    prompts = _prompts(24)
    fp32 = _prefill_logits(_model(weights, "fp32"), prompts)
    fp16 = _prefill_logits(_model(weights, "fp16"), prompts)
    quantized32 = _prefill_logits(_model(dequantized, "fp32"), prompts)
    fp8 = _prefill_logits(_model(weights, "fp8"), prompts)
    weight_error = np.mean(
        [
            np.linalg.norm(dequantized[n] - w) / np.linalg.norm(w)
            for n, w in weights.items()
            if dequantized[n] is not w
        ]
    )
    # e4m3 rounds to 3 mantissa bits: about 2.5% RMS per weight (measured 2.5%)
    assert 0.01 < weight_error < 2**-4
    quantization = _relative(quantized32, fp32)  # measured 5.5%: six products in two layers
    half = _relative(fp16, fp32)  # measured 0.12%
    # The fp8 engine is the quantized model in fp16: its distance from it is fp16's (measured
    # 0.12%), its distance from fp32 the quantization's.
    assert _relative(fp8, quantized32) < 2 * half
    assert abs(_relative(fp8, fp32) - quantization) < 2 * half
    assert quantization < 4 * weight_error


@pytest.mark.parametrize("beams", [1, 4])
def test_fp8_decodes_as_the_quantized_model_in_fp32(beams: int) -> None:
    """Token equality: the fp8 engine (fp16 activations) against the quantized model with float32
    activations; fp16 parts them only on near-ties, as it parts fp16 from fp32 (40 prompts: 38
    and 40 of 40 equal, greedy and beam 4, where fp16 against fp32 gave 40 and 39)."""
    weights = random_weights(SHAPE, seed=3)
    config = replace(gptj_config(EOS), num_beams=beams, min_new_tokens=3, max_new_tokens=16)
    prompts = _prompts(12)
    fp8 = generate(_engine(_model(weights, "fp8"), 4, beams, 16), prompts, config)
    in_fp32 = generate(_engine(_fp8_in_fp32(weights), 4, beams, 16), prompts, config)
    assert sum(a == b for a, b in zip(fp8, in_fp32, strict=True)) >= len(prompts) - 1


def test_real_size_seeded_model_in_fp8_at_a_small_size() -> None:
    torch = _torch()
    cpu = torch.device("cpu")
    model = random_gptj(torch, SHAPE, cpu, "fp8", seed=0)
    assert all(b.fc_out.weight8 is not None for b in model.blocks)
    assert model.lm_head.dtype == torch.float16
    # the same draw as fp16's up to the quantization: one seed, drawn in float32 for both
    fp16 = random_gptj(torch, SHAPE, cpu, "fp16", seed=0)
    back = model.blocks[1].out.dequantized(torch, torch.float32)
    original = fp16.blocks[1].out.weight.float()
    assert float((back - original).norm() / original.norm()) < 2**-4
    config = gptj_config(EOS).forced(9)
    outputs = generate(_engine(model, 2, 4, 16), _prompts(3), [config] * 3)
    assert [len(o) for o in outputs] == [9, 9, 9]
