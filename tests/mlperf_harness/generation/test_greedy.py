"""The scheduler's greedy path (generation/greedy.py: every one-beam sample in arrays) against
BeamSearch with one beam fed the same candidates sample by sample: the same outputs, the same
first tokens reported once each before the sample's end, under in-flight batching (few slots, many
samples, EOS at any step, minimum and maximum lengths, forced lengths)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from mlperf_harness.generation.beams import BeamSearch, GenerationConfig
from mlperf_harness.generation.engine import BoolArray, Candidates, Float32Array, Int64Array
from mlperf_harness.generation.scheduler import Finished, FirstToken, generate

EOS, VOCAB = 2, 50


def _best_two(history: Sequence[int], block_eos: bool) -> tuple[list[int], list[float]]:
    """A sample's two best next tokens and their log-probabilities, a function of its tokens so
    far alone (so of neither its slot nor the other samples): EOS about one step in six."""
    rng = np.random.default_rng(zlib.crc32(np.asarray(history, np.int64).tobytes()))
    logp = np.log(rng.dirichlet(np.ones(VOCAB)))
    logp[EOS] = logp.max() + 1.0 if rng.random() < 1 / 6 else logp[EOS]
    if block_eos:
        logp[EOS] = -np.inf
    top = np.argsort(-logp, kind="stable")[:2]
    return [int(t) for t in top], [float(logp[t]) for t in top]


class HistoryEngine:
    """One beam a slot; each slot's candidates from its own prompt and tokens (`_best_two`); the
    running score the scheduler passes back checked against the chosen candidates' (`scores`)."""

    beams, eos_id = 1, EOS
    joins_prefill, prefilling = False, frozenset[int]()

    def __init__(self, slots: int, max_length: int) -> None:
        self.slots, self.max_length = slots, max_length
        self.history: dict[int, list[int]] = {}
        self.scores: dict[int, np.float32] = {}  # each slot's running score
        self.offered: dict[int, np.float32] = {}  # the best candidate's, at the last step

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        for slot, prompt in zip(slots, prompts, strict=True):
            self.history[slot] = [int(t) for t in prompt]
            self.scores[slot] = np.float32(0.0)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        assert k == 2 and beam_scores.shape == (len(slots), 1)
        tokens, scores = [], []
        for i, slot in enumerate(slots):
            assert beam_scores[i, 0] == self.scores[slot]
            top, logp = _best_two(self.history[slot], bool(block_eos[i]))
            tokens.append(top)
            scores.append([beam_scores[i, 0] + p for p in logp])
            self.offered[slot] = np.float32(scores[-1][0])
        return Candidates(
            np.array(scores, np.float32),
            np.array(tokens, np.int64),
            np.zeros((len(slots), 2), np.int64),
        )

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        assert parents.shape == tokens.shape == (len(slots), 1) and not parents.any()
        for slot, token in zip(slots, tokens[:, 0], strict=True):
            self.history[slot].append(int(token))
            self.scores[slot] = self.offered[slot]

    def release(self, slots: Sequence[int]) -> None:
        for slot in slots:
            del self.history[slot]


def _alone(prompt: Int64Array, config: GenerationConfig) -> tuple[list[int], int]:
    """BeamSearch with one beam, one sample: its output and its first token."""
    search = BeamSearch(config, int(prompt.size))
    history = [int(t) for t in prompt]
    score = np.float32(0.0)
    first = None
    while True:
        top, logp = _best_two(history, search.blocks_eos)
        scores = np.array([score + p for p in logp], np.float32)
        advance = search.step(scores, np.array(top, np.int64), np.zeros(2, np.int64))
        first = search.first_token() if first is None else first
        if advance is None:
            assert first is not None
            return search.output(), first
        history.append(int(advance.tokens[0]))
        score = search.beam_scores[0]


@pytest.mark.parametrize("slots", [1, 3, 8])
def test_greedy_path_gives_what_one_beam_search_gives(slots: int) -> None:
    rng = np.random.default_rng(4)
    prompts = [rng.integers(3, VOCAB, int(n)).astype(np.int64) for n in rng.integers(1, 9, 40)]
    configs = [
        GenerationConfig(EOS, int(low), int(low + extra))
        for low, extra in zip(rng.integers(0, 4, 40), rng.integers(1, 12, 40), strict=True)
    ]
    configs[:5] = [GenerationConfig(EOS, 0, 1), *(configs[1].forced(n) for n in (1, 7, 12, 3))]
    events: list[object] = []
    outputs = generate(HistoryEngine(slots, 64), prompts, configs, events.append)
    expected = [_alone(p, c) for p, c in zip(prompts, configs, strict=True)]
    assert outputs == [out for out, _ in expected]
    assert any(out[-1] == EOS for out in outputs) and any(out[-1] != EOS for out in outputs)
    firsts = [e for e in events if isinstance(e, FirstToken)]
    assert sorted(e.request.key for e in firsts) == list(range(40))  # once each
    for first in firsts:
        assert first.token == expected[first.request.key][1] == outputs[first.request.key][0]
    ends = {e.request.key: i for i, e in enumerate(events) if isinstance(e, Finished)}
    for i, event in enumerate(events):
        if isinstance(event, FirstToken):
            assert i < ends[event.request.key]
