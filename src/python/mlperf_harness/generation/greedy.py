"""Greedy decoding (one beam) of every live sample at once, their state held in arrays by slot: the
scheduler's search where the engine has one beam (Llama2's). It gives what `BeamSearch` with one
beam gives each sample (tests/.../generation/test_greedy.py runs both on the same candidates),
without a Python call per sample per step: with 626 live samples (Llama2-70B over two H200s) that
per-sample work was most of the host's 10 ms a step with the GPU idle.

One beam's rules, as BeamSearch applies them: each step's best candidate is the next token; an
EOS there ends the sample with the EOS appended; a sample ends at max_new_tokens as it is; the
first token is certain after the first step (the first candidate, EOS included); EOS is blocked
(by the engine) while fewer than min_new_tokens were made; the running score is the best
candidate's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.engine import BoolArray, Candidates, Float32Array, Int64Array


@dataclass(frozen=True)
class GreedyStep:
    """One step's outcome over the slots given, in their order."""

    first: BoolArray  # the sample's first token became certain now: it is `tokens`'
    finished: BoolArray
    tokens: Int64Array  # each sample's best candidate


class GreedyBatch:
    def __init__(self, slots: int, max_new_tokens: int) -> None:
        """`max_new_tokens`: the most any sample may make (the engine's whole length bounds it)."""
        self.generated = np.zeros(slots, np.int64)
        self.min_new = np.zeros(slots, np.int64)
        self.max_new = np.zeros(slots, np.int64)
        self.eos = np.zeros(slots, np.int64)
        self.scores = np.zeros(slots, np.float32)
        self.made = np.zeros((slots, max_new_tokens), np.int64)  # each slot's new tokens so far

    def start(self, slot: int, config: GenerationConfig) -> None:
        self.generated[slot] = 0
        self.min_new[slot] = config.min_new_tokens
        self.max_new[slot] = config.max_new_tokens
        self.eos[slot] = config.eos_id
        self.scores[slot] = 0.0

    def inputs(self, slots: Int64Array) -> tuple[Float32Array, BoolArray]:
        """The engine's `beam_scores` [n, 1] and `block_eos` [n] for these slots."""
        return self.scores[slots, None], self.generated[slots] < self.min_new[slots]

    def step(self, slots: Int64Array, candidates: Candidates) -> GreedyStep:
        best = candidates.tokens[:, 0]
        generated = self.generated[slots]
        ended_on_eos = best == self.eos[slots]
        # An EOS is kept as any token is: the output ends with it (BeamSearch appends it to the
        # closed hypothesis, which is shorter than max_new_tokens since the sample had not ended).
        self.made[slots, generated] = best
        self.generated[slots] = generated + 1
        self.scores[slots] = candidates.scores[:, 0]
        finished = ended_on_eos | (generated + 1 >= self.max_new[slots])
        return GreedyStep(generated == 0, finished, best)

    def output(self, slot: int) -> list[int]:
        return [int(t) for t in self.made[slot, : self.generated[slot]]]
