"""A DecoderEngine whose every call runs with its GPU as torch's current device: its CUDA graphs,
streams and allocations belong to that GPU, while the serving loop's thread that calls it has no
current device of its own (every thread starts on GPU 0). GPT-J's and Llama's torch engines."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from mlperf_harness.generation.engine import (
    BoolArray,
    Candidates,
    DecoderEngine,
    Float32Array,
    Int64Array,
    PassThroughEngine,
)


class OnGpu(PassThroughEngine):
    def __init__(self, engine: DecoderEngine, torch: Any, gpu: int) -> None:
        super().__init__(engine)
        self._device = functools.partial(torch.cuda.device, gpu)

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        with self._device():
            super().prefill(slots, prompts)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        with self._device():
            return super().candidates(slots, beam_scores, block_eos, k)

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        with self._device():
            super().advance(slots, parents, tokens)

    def release(self, slots: Sequence[int]) -> None:
        with self._device():
            super().release(slots)
