"""A DecoderEngine over a step model: any decoder whose one call takes new tokens, their positions,
an attention mask and the past keys and values, and returns logits and the new cache (Hugging
Face's ONNX export of a decoder with past: GPT-J's stand-in graph on ONNX Runtime, or its NumPy
forward in tests). The CPU engine.

Each slot keeps its own cache, [beams, heads, length, head_dim] per layer. A decode step runs all
live slots in one call: slots of different lengths are left-padded to the longest, the padding
masked out, and each slot's new cache cut back to its own length afterwards. Prompts are
prefilled one per call (their lengths differ; padding a prompt would cost more than it saves on
the CPU).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import (
    BoolArray,
    Candidates,
    DecoderEngine,
    Float32Array,
    Int64Array,
)

Cache = list[tuple[Float32Array, Float32Array]]  # per layer (key, value) [batch, heads, len, dim]


class StepModel(Protocol):
    """One forward over new tokens given the cache: logits [batch, new, vocab] and the new cache."""

    def __call__(
        self,
        input_ids: Int64Array,
        position_ids: Int64Array,
        attention_mask: Int64Array,
        past: Cache,
    ) -> tuple[Float32Array, Cache]: ...

    def empty_cache(self, batch: int) -> Cache: ...


def log_softmax(logits: Float32Array) -> Float32Array:
    shifted = logits - logits.max(-1, keepdims=True)
    out: Float32Array = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return out


def top_candidates(
    logits: Float32Array, beam_scores: Float32Array, block_eos: BoolArray, eos_id: int, k: int
) -> Candidates:
    """`logits` [n, beams, vocab] -> each slot's best k over beams x vocab (DecoderEngine's
    `candidates`); a stable sort, so ties go to the lower beam, then the lower token."""
    n, beams, vocab = logits.shape
    scores = log_softmax(logits.astype(np.float32))
    scores[block_eos, :, eos_id] = -np.inf
    flat = (scores + beam_scores[:, :, None]).reshape(n, beams * vocab)
    top = np.argsort(-flat, axis=1, kind="stable")[:, :k]
    parents, tokens = np.divmod(top, vocab)
    return Candidates(
        np.take_along_axis(flat, top, axis=1).astype(np.float32),
        tokens.astype(np.int64),
        parents.astype(np.int64),
    )


@dataclass
class _Slot:
    cache: Cache  # [beams, heads, length, dim] per layer
    length: int  # tokens in the cache
    logits: Float32Array  # [beams, vocab]: the next token's, held for `candidates`


class StepModelEngine:
    """DecoderEngine over a StepModel (module docstring)."""

    joins_prefill = False  # each prefill runs when called (DecoderEngine)
    prefilling: frozenset[int] = frozenset()

    def __init__(
        self, model: StepModel, eos_id: int, *, slots: int, beams: int, max_length: int
    ) -> None:
        if slots < 1 or beams < 1:
            raise HarnessError(f"an engine needs slots >= 1 and beams >= 1, got {slots}, {beams}")
        self.model = model
        self._eos_id = eos_id
        self._slots = slots
        self._beams = beams
        self._max_length = max_length
        self._live: dict[int, _Slot] = {}

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def beams(self) -> int:
        return self._beams

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def eos_id(self) -> int:
        return self._eos_id

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        for slot, prompt in zip(slots, prompts, strict=True):
            ids = np.asarray(prompt, np.int64)[None, :]
            positions = np.arange(ids.shape[1], dtype=np.int64)[None, :]
            logits, cache = self.model(ids, positions, np.ones_like(ids), self.model.empty_cache(1))
            beams = self._beams
            self._live[slot] = _Slot(
                [(np.repeat(k, beams, axis=0), np.repeat(v, beams, axis=0)) for k, v in cache],
                ids.shape[1],
                np.repeat(logits[:, -1, :], beams, axis=0),
            )

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        logits = np.stack([self._live[slot].logits for slot in slots])
        return top_candidates(logits, beam_scores, block_eos, self._eos_id, k)

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        if not len(slots):
            return
        beams = self._beams
        live = [self._live[slot] for slot in slots]
        longest = max(state.length for state in live)
        layers = len(live[0].cache)
        past: Cache = []
        for layer in range(layers):
            keys, values = [], []
            for state, order in zip(live, parents, strict=True):
                key, value = state.cache[layer]
                pad = ((0, 0), (0, 0), (longest - state.length, 0), (0, 0))
                keys.append(np.pad(key[order], pad))
                values.append(np.pad(value[order], pad))
            past.append((np.concatenate(keys), np.concatenate(values)))
        mask = np.zeros((len(live) * beams, longest + 1), np.int64)
        positions = np.empty((len(live) * beams, 1), np.int64)
        for i, state in enumerate(live):
            rows = slice(i * beams, (i + 1) * beams)
            mask[rows, longest - state.length :] = 1
            positions[rows] = state.length
        logits, present = self.model(
            np.asarray(tokens, np.int64).reshape(-1, 1), positions, mask, past
        )
        for i, state in enumerate(live):
            rows = slice(i * beams, (i + 1) * beams)
            start = longest - state.length
            state.cache = [(k[rows, :, start:], v[rows, :, start:]) for k, v in present]
            state.length += 1
            state.logits = logits[rows, -1, :]

    def release(self, slots: Sequence[int]) -> None:
        for slot in slots:
            self._live.pop(slot, None)


def step_engine_makers(
    session: Callable[..., StepModel], graph: bytes, shape: object, *, workers: int, **engine: int
) -> Callable[[], list[Callable[[], DecoderEngine]]]:
    """What a run on ONNX Runtime asks for its engines (PreparedRun.make_engines): `workers` makers
    of an engine over `session(graph, shape, threads=threads)` (OrtGptj, ort_llama); `engine`:
    threads, eos_id, slots, beams and max_length. Each maker is a module-level function bound by
    functools.partial, so that it pickles: a run with --engine_processes sends it to the engine's
    own process (generation/engine_process.py)."""
    maker = functools.partial(_step_model_engine, session, graph, shape, **engine)
    return lambda: [maker] * workers


def _step_model_engine(
    session: Callable[..., StepModel],
    graph: bytes,
    shape: object,
    *,
    threads: int,
    eos_id: int,
    slots: int,
    beams: int,
    max_length: int,
) -> DecoderEngine:
    return StepModelEngine(
        session(graph, shape, threads=threads),
        eos_id,
        slots=slots,
        beams=beams,
        max_length=max_length,
    )
