"""GPT-J's torch engine on the CPU where torch is installed (float32, the dense attention path): its
decoding through the in-flight scheduler equals the reference beam search over the NumPy forward,
with EOS chosen early, late or never, more prompts than slots; a live slot left out of a step keeps
its state; bad calls give one line.

torch is no dependency of the CPU build, so in CI these tests are skipped; GPU hosts and any
environment with torch run them. On a GPU the fp16 path (FlashAttention, CUDA graphs) is checked
against the same reference by `torch_gptj.device_check` (benchmarks/gptj/device/engine.sh).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.gptj.decoding import beam_search, gptj_config
from mlperf_harness.benchmarks.gptj.session import NumpyGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, random_weights
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.module import from_weights
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.scheduler import generate

pytestmark = needs_torch
SHAPE = GptjShape(layers=2, hidden=64, heads=4, rotary_dim=8, vocab_size=97, inner=96)
EOS = 5


def _engine(weights: Any, slots: int, max_new: int) -> TorchGptjEngine:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    model = from_weights(torch, weights, SHAPE, torch.device("cpu"), "fp32")
    return TorchGptjEngine(model, CacheLayout(slots, 4, 32, max_new), EOS)


@pytest.mark.parametrize("eos_bias", [0.0, 2.0, 4.0])
def test_engine_decodes_as_the_reference_beam_search(eos_bias: float) -> None:
    weights = random_weights(SHAPE, seed=3)
    weights["lm_head.bias"][EOS] += eos_bias  # EOS never, sometimes, early
    config = replace(gptj_config(EOS), min_new_tokens=3, max_new_tokens=16)
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, SHAPE.vocab_size, n) for n in (5, 17, 9, 30, 1, 12, 3)]
    got = generate(_engine(weights, slots=3, max_new=16), prompts, config)
    expected = [beam_search(NumpyGptj(weights, SHAPE), p, config) for p in prompts]
    assert got == expected
    if eos_bias:
        assert any(out[-1] == EOS for out in got)


def test_a_slot_left_out_of_a_step_keeps_its_state() -> None:
    weights = random_weights(SHAPE, seed=4)
    prompts = [np.arange(1, 8), np.arange(10, 30)]
    parents = np.array([[0, 0, 1, 2]])

    def run(interleave: bool) -> Any:
        engine = _engine(weights, slots=2, max_new=8)
        engine.prefill([0, 1], prompts)
        no_eos = np.zeros(1, bool)
        for step in range(3):
            if interleave:  # slot 0 advances alone, slot 1 waits
                engine.advance([0], parents, np.full((1, 4), 40 + step))
            engine.advance([1], parents, np.full((1, 4), 60 + step))
        return engine.candidates([1], np.zeros((1, 4), np.float32), no_eos, 8)

    alone, interleaved = run(False), run(True)
    assert np.array_equal(alone.tokens, interleaved.tokens)
    assert np.allclose(alone.scores, interleaved.scores, atol=1e-5)


def test_bad_calls_give_one_line() -> None:
    engine = _engine(random_weights(SHAPE, seed=1), slots=2, max_new=4)
    with pytest.raises(HarnessError, match="at most 32"):
        engine.prefill([0], [np.zeros(33, np.int64)])
    with pytest.raises(HarnessError, match="non-empty"):
        engine.prefill([0], [np.zeros(0, np.int64)])
    with pytest.raises(HarnessError, match="outside the vocabulary"):
        engine.prefill([0], [np.array([97])])
    with pytest.raises(HarnessError, match="holds no sample"):
        engine.advance([1], np.zeros((1, 4), np.int64), np.zeros((1, 4), np.int64))
    engine.prefill([0], [np.array([1, 2])])
    with pytest.raises(HarnessError, match="still holds a sample"):
        engine.prefill([0], [np.array([1, 2])])
