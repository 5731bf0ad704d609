"""Greedy and beam search over the KV cache: one beam is greedy, lengths respect min/max new
tokens, EOS ends a sequence; tiny random models in ONNX Runtime."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.benchmarks.gptj.decoding import beam_search, greedy
from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, gptj_model, random_weights
from mlperf_harness.generation.beams import GenerationConfig

TINY = GptjShape(
    layers=2, hidden=32, heads=4, rotary_dim=4, vocab_size=40, inner=64, max_positions=256
)
EOS = 39


def _session(eos_bias: float, seed: int = 5) -> OrtGptj:
    weights = random_weights(TINY, seed)
    weights["lm_head.bias"][EOS] = eos_bias
    return OrtGptj(gptj_model(weights, TINY).SerializeToString(), TINY)


PROMPTS = [np.array(p, np.int64) for p in ([1, 2, 3, 4, 5], [7], [3, 9, 27, 1, 8, 30, 2, 2])]


@pytest.mark.parametrize("eos_bias", [-1e4, 0.0, 4.0, 1e4])
def test_one_beam_is_greedy(eos_bias: float) -> None:
    session = _session(eos_bias)
    for minimum in (0, 3):
        config = GenerationConfig(
            eos_id=EOS, min_new_tokens=minimum, max_new_tokens=20, num_beams=1
        )
        for prompt in PROMPTS:
            assert beam_search(session, prompt, config) == greedy(session, prompt, config)


def test_eos_is_held_back_until_min_new_tokens_and_ends_the_output() -> None:
    session = _session(1e4)  # EOS wins whenever it may
    for beams in (1, 4):
        config = GenerationConfig(
            eos_id=EOS, min_new_tokens=30, max_new_tokens=128, num_beams=beams
        )
        for prompt in PROMPTS:
            out = (
                greedy(session, prompt, config)
                if beams == 1
                else beam_search(session, prompt, config)
            )
            assert len(out) == 31 and out[-1] == EOS and EOS not in out[:-1]


def test_without_eos_outputs_stop_at_max_new_tokens() -> None:
    session = _session(-1e4)  # EOS never wins
    config = GenerationConfig(eos_id=EOS, min_new_tokens=30, max_new_tokens=40, num_beams=4)
    for prompt in PROMPTS:
        assert len(greedy(session, prompt, config)) == 40
        out = beam_search(session, prompt, config)
        assert len(out) == 40 and EOS not in out


def test_beam_search_lengths_within_bounds_and_finds_a_better_sequence() -> None:
    session = _session(2.0)
    config = GenerationConfig(eos_id=EOS, min_new_tokens=3, max_new_tokens=12, num_beams=4)
    greedy_config = GenerationConfig(eos_id=EOS, min_new_tokens=3, max_new_tokens=12, num_beams=1)
    for prompt in PROMPTS:
        out = beam_search(session, prompt, config)
        assert 4 <= len(out) <= 12 or (len(out) == 12 and EOS not in out)
        assert EOS not in out[:3] and EOS not in out[:-1]
        # beam search scores at least as well as greedy by its own measure (log-prob / length)
        assert (
            _score(session, prompt, out, EOS)
            >= _score(session, prompt, greedy(session, prompt, greedy_config), EOS) - 1e-4
        )


def _score(session: OrtGptj, prompt: npt.NDArray[Any], out: list[int], eos: int) -> float:
    """Sum of log-probabilities of `out` (EOS included) over the generated length without EOS."""
    ids = np.concatenate([prompt, np.array(out, np.int64)])[None, :]
    logits, _ = session(
        ids, np.arange(ids.shape[1])[None, :], np.ones_like(ids), session.empty_cache(1)
    )
    logp = (
        logits[0]
        - np.log(np.exp(logits[0] - logits[0].max(-1, keepdims=True)).sum(-1, keepdims=True))
        - logits[0].max(-1, keepdims=True)
    )
    steps = range(prompt.size - 1, ids.shape[1] - 1)
    total = float(sum(logp[s, ids[0, s + 1]] for s in steps))
    length = len(out) - 1 if out[-1] == eos else len(out)
    return total / length


def test_bad_settings_are_one_line() -> None:
    from one_line_errors import raised_line

    assert "min_new_tokens" in raised_line(
        GenerationConfig, eos_id=EOS, min_new_tokens=5, max_new_tokens=4
    )
    assert "num_beams" in raised_line(
        GenerationConfig, eos_id=EOS, min_new_tokens=1, max_new_tokens=4, num_beams=0
    )
