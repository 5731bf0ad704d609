"""What the serving loop asks of a decoder: a KV cache of `slots` samples, each `beams` rows, that
it prefills, scores and advances one token at a time. The CPU engine (ONNX Runtime) and the GPU
engine (torch) both implement it; beam search (generation/beams.py) and the serving loop
(generation/serving.py) are written once, over it.

Why the engine, not the caller, scores: a step's log-probabilities are [rows, vocab] (GPT-J:
50,400 per row), too large to copy to the host each token on a GPU. The engine returns only each
slot's top `k` candidates over beams x vocab, a few numbers per slot; the host keeps the beams'
bookkeeping (closed hypotheses, EOS, lengths) and tells the engine which rows survive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

Int64Array = npt.NDArray[np.int64]
Float32Array = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Candidates:
    """Per slot, its best `k` continuations over all its beams, best first (ties: lower flat index
    beam * vocab + token first, where the engine can order them so)."""

    scores: Float32Array  # [n, k] running score: the beam's score + log p(token)
    tokens: Int64Array  # [n, k]
    parents: Int64Array  # [n, k] which beam of the slot each continues (0 .. beams - 1)


class DecoderEngine(Protocol):
    """A decoder with its KV cache allocated for `slots` samples of `beams` rows each."""

    @property
    def slots(self) -> int:
        """How many samples can be live at once."""

    @property
    def beams(self) -> int:
        """Rows per slot (1: greedy)."""

    @property
    def max_length(self) -> int:
        """The most tokens (prompt and generated) one row holds."""

    @property
    def eos_id(self) -> int: ...

    @property
    def joins_prefill(self) -> bool:
        """Whether `prefill` only queues its prompts, their tokens then run in the next `advance`'s
        forward beside the decode step's (chunked prefill: one read of the weights for both); the
        scheduler then admits just before an advance."""

    @property
    def prefilling(self) -> frozenset[int]:
        """The slots whose prompts are not yet wholly in the cache (a long prompt may take several
        advances): `candidates` must not name them yet. Empty where prefills run at once."""

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        """Run each prompt into its slot's cache (every beam row of the slot the same) and hold
        the next-token log-probabilities of the prompt's last position for `candidates`."""

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        """For each slot: log-softmax of its held logits per beam row, EOS at -inf where
        `block_eos` (fewer than min_new_tokens made), plus `beam_scores` [n, beams]; the best `k`
        over beams x vocab."""

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        """Each slot's beam row b becomes a copy of its row `parents[i, b]` (the cache reordered
        within the slot) followed by `tokens[i, b]`; one decode step over them, whose logits are
        held for the next `candidates`."""

    def release(self, slots: Sequence[int]) -> None:
        """These slots' samples are done: their rows may be reused (prefill overwrites them)."""


class PassThroughEngine:
    """A DecoderEngine that hands every call to `engine`: the base of wrappers that add something
    around some calls (the GPU a call runs under, a timer), overriding only those."""

    def __init__(self, engine: DecoderEngine) -> None:
        self.engine = engine

    @property
    def slots(self) -> int:
        return self.engine.slots

    @property
    def beams(self) -> int:
        return self.engine.beams

    @property
    def max_length(self) -> int:
        return self.engine.max_length

    @property
    def eos_id(self) -> int:
        return self.engine.eos_id

    @property
    def joins_prefill(self) -> bool:
        return self.engine.joins_prefill

    @property
    def prefilling(self) -> frozenset[int]:
        return self.engine.prefilling

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        self.engine.prefill(slots, prompts)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        return self.engine.candidates(slots, beam_scores, block_eos, k)

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        self.engine.advance(slots, parents, tokens)

    def release(self, slots: Sequence[int]) -> None:
        self.engine.release(slots)

    def close(self) -> None:
        close_engine(self.engine)


def close_engine(engine: DecoderEngine) -> None:
    """Ends what an engine holds, where it holds something beyond its memory (a tensor-parallel
    group's worker processes: parallel.py); others have no `close`."""
    close = getattr(engine, "close", None)
    if close is not None:
        close()
