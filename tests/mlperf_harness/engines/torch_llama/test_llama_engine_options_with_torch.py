"""The torch Llama engine's options (options.py) on the CPU where torch is installed: every
combination of prefill (serial, packed), decode attention (gqa, folded, packed) and fixed-shape
steps (graphs: on the CPU the same step runs eagerly) decodes greedily as the NumPy model does,
with more prompts than slots, in float32; with slot counts whose buckets leave rows without a
sample (their writes go to the scratch row); with the FP8 cache, each variant's logits are the
first engine's to float32 rounding (the scales folded elsewhere, the same numbers); FP8 weights
through torch._scaled_mm (where this torch has it on the CPU) match their dequantized product.

torch is no dependency of the CPU build, so in CI these tests are skipped.
"""

from __future__ import annotations

import itertools
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
from mlperf_harness.engines.torch_llama.options import ATTENTIONS, PREFILLS, EngineOptions
from mlperf_harness.engines.torch_llama.weights import numpy_tensors
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

pytestmark = needs_torch
SHAPE = LlamaShape(
    layers=2, hidden=64, heads=8, kv_heads=2, inner=96, vocab_size=97, max_positions=160
)
EOS = 5
WEIGHTS = random_weights(SHAPE, seed=3)
VARIANTS = [
    EngineOptions(prefill=p, attention=a, graphs=g, prefill_tokens=24)  # 24: several forwards
    for p, a, g in itertools.product(PREFILLS, ATTENTIONS, (False, True))
]


def _engine(slots: int, options: EngineOptions, kv_fp8: bool = False) -> TorchLlamaEngine:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    tensors = numpy_tensors(torch, WEIGHTS, SHAPE, torch.device("cpu"), torch.float32)
    model = from_tensors(torch, SHAPE, tensors, lambda w: Linear(weight=w))
    return TorchLlamaEngine(model, slots, 48, 100, EOS, kv_fp8=kv_fp8, options=options)


def _workload() -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, SHAPE.vocab_size, n) for n in (5, 17, 9, 30, 1, 12, 3, 44)]
    # 2..90 new tokens: caches past one 256-entry bucket of the packed runs at 17 slots
    configs = [llama2_config(EOS).forced(int(n)) for n in (2, 20, 7, 90, 2, 11, 5, 60)]
    return prompts, configs


@pytest.mark.parametrize("slots", [3, 17])  # 17: buckets of 8 and 17 rows, rows without samples
@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: o.name.replace(" ", "-"))
def test_every_variant_decodes_as_the_numpy_model(options: EngineOptions, slots: int) -> None:
    prompts, configs = _workload()
    numpy = StepModelEngine(numpy_llama(WEIGHTS, SHAPE), EOS, slots=3, beams=1, max_length=148)
    assert generate(_engine(slots, options), prompts, configs) == generate(numpy, prompts, configs)


def test_fp8_cache_variants_give_the_first_engines_logits() -> None:
    prompts, _ = _workload()
    slots = list(range(len(prompts)))
    held = {}
    for options in VARIANTS:
        engine = _engine(len(prompts), options, kv_fp8=True)
        engine.prefill(slots, prompts)
        for step in range(6):
            tokens = np.full((len(slots), 1), step + 7, np.int64)
            engine.advance(slots, np.zeros((len(slots), 1), np.int64), tokens)
        held[options.name] = engine.held.numpy().copy()
    first = held[EngineOptions().name]  # the scales from the first prompt in every variant
    for name, logits in held.items():
        np.testing.assert_allclose(logits, first, rtol=1e-4, atol=1e-4, err_msg=name)


def test_fp8_weights_through_scaled_mm_match_their_dequantized_product() -> None:
    import torch  # pants: no-infer-dep

    weight = torch.randn(48, 64) * torch.linspace(0.01, 10, 48)[:, None]
    x = torch.randn(5, 64)
    fast = quantize(torch, weight, scaled_mm=True)
    try:
        got = fast(torch, x)
    except (RuntimeError, NotImplementedError) as error:
        pytest.skip(f"this torch has no CPU torch._scaled_mm with row-wise scales: {error}")
    slow = quantize(torch, weight, scaled_mm=False)(torch, x)
    # x quantized per row to e4m3 on the fast path: within e4m3's rounding of x's share
    assert torch.allclose(got, slow, rtol=0.07, atol=0.07 * float(slow.abs().max()))
