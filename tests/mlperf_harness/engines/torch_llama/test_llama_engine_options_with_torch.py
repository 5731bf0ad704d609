"""The torch Llama engine's options (options.py) on the CPU where torch is installed: every
combination of prefill (serial, packed), decode attention (gqa, folded, packed, fp8kernel: here its
reference; llama_interpreted_attention.py runs its kernel interpreted) and fixed-shape
steps (graphs: on the CPU the same step runs eagerly) decodes greedily as the NumPy model does,
with more prompts than slots, in float32; with slot counts whose buckets leave rows without a
sample (their writes go to the scratch row); with the FP8 cache, each variant's logits are the
first engine's to float32 rounding (the scales folded elsewhere, the same numbers); FP8 weights
through torch._scaled_mm (where this torch has it on the CPU) match their dequantized product.

torch is no dependency of the CPU build, so in CI these tests are skipped.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tiny_llama_engine import engine, numpy_tokens, workload
from torch_needed import needs_torch

from mlperf_harness.engines.fp8_linear import quantize
from mlperf_harness.engines.torch_llama.options import ATTENTIONS, PREFILLS, EngineOptions
from mlperf_harness.generation.scheduler import generate

pytestmark = needs_torch
VARIANTS = [
    EngineOptions(prefill=p, attention=a, graphs=g, prefill_tokens=24)  # 24: several forwards
    for p, a, g in itertools.product(PREFILLS, ATTENTIONS, (False, True))
]


@pytest.mark.parametrize("slots", [3, 17])  # 17: buckets of 8 and 17 rows, rows without samples
@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: o.name.replace(" ", "-"))
def test_every_variant_decodes_as_the_numpy_model(options: EngineOptions, slots: int) -> None:
    prompts, configs = workload()
    assert generate(engine(slots, options), prompts, configs) == numpy_tokens()


def test_fp8_cache_variants_give_the_first_engines_logits() -> None:
    prompts, _ = workload()
    slots = list(range(len(prompts)))
    held = {}
    for options in VARIANTS:
        fp8 = engine(len(prompts), options, kv_fp8=True)
        fp8.prefill(slots, prompts)
        for step in range(6):
            tokens = np.full((len(slots), 1), step + 7, np.int64)
            fp8.advance(slots, np.zeros((len(slots), 1), np.int64), tokens)
        held[options.name] = fp8.held.numpy().copy()
    first = held[EngineOptions().name]  # the scales from the first prompt in every variant
    for name, logits in held.items():
        np.testing.assert_allclose(logits, first, rtol=1e-4, atol=1e-4, err_msg=name)


def test_fp8_weights_through_scaled_mm_match_their_dequantized_product() -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

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
