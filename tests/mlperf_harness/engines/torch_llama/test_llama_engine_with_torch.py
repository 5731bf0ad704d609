"""The torch Llama engine on the CPU where torch is installed (float32; the GPU's FP8 GEMMs fall
back to dequantized weights there): greedy decoding through the in-flight scheduler equals the NumPy
model's through the CPU engine, with more prompts than slots; FP8 weights with per-channel scales
stay within e4m3's rounding of the float32 product; bad calls give one line.

torch is no dependency of the CPU build, so in CI these tests are skipped; a GPU host runs the same
comparison in `torch_llama.device_check` (benchmarks/llama2-70b/device/gpu_scenarios.sh).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.model import LlamaShape, random_weights
from mlperf_harness.benchmarks.llama2_70b.session import numpy_llama
from mlperf_harness.engines.fp8_linear import Linear, quantize
from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.engines.torch_llama.module import from_tensors
from mlperf_harness.engines.torch_llama.weights import numpy_tensors
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

pytestmark = needs_torch
SHAPE = LlamaShape(
    layers=2, hidden=64, heads=8, kv_heads=2, inner=96, vocab_size=97, max_positions=128
)
EOS = 5


def _engine(weights: Any, slots: int) -> TorchLlamaEngine:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    tensors = numpy_tensors(torch, weights, SHAPE, torch.device("cpu"), torch.float32)
    model = from_tensors(torch, SHAPE, tensors, lambda w: Linear(weight=w))
    return TorchLlamaEngine(model, slots, 48, 48, EOS, kv_fp8=False)


def test_engine_decodes_as_the_numpy_model() -> None:
    weights = random_weights(SHAPE, seed=3)
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, SHAPE.vocab_size, n) for n in (5, 17, 9, 30, 1, 12, 3)]
    configs = [llama2_config(EOS).forced(int(n)) for n in (2, 20, 7, 33, 2, 11, 5)]
    got = generate(_engine(weights, slots=3), prompts, configs)
    numpy = StepModelEngine(numpy_llama(weights, SHAPE), EOS, slots=3, beams=1, max_length=96)
    assert got == generate(numpy, prompts, configs)
    with pytest.raises(HarnessError, match="greedily"):
        engine = _engine(weights, slots=1)
        engine.prefill([0], [prompts[0]])
        engine.advance([0], np.ones((1, 1), np.int64), np.ones((1, 1), np.int64))


def test_fp8_weights_with_per_channel_scales() -> None:
    import torch  # pants: no-infer-dep

    weight = torch.randn(64, 32) * torch.linspace(0.01, 10, 64)[:, None]  # channels of any size
    layer = quantize(torch, weight, scaled_mm=False)
    x = torch.randn(5, 32)
    exact = x @ weight.t()
    assert torch.allclose(layer(torch, x), exact, rtol=0.07, atol=0.07 * float(exact.abs().max()))
