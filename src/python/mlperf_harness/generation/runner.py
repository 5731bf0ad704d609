"""A DecoderEngine seen as a batch Runner: what the harness warms up, and what the engine timing at
a run's start (harness/engine_timing.py) times, a "call" being a batch of samples generated to the
end together. The serving loop (generation/serving.py) drives the same engine directly."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.engine_process import EngineProcess
from mlperf_harness.generation.prompts import PAD, PromptStore, unpad
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.harness.sample_store import SampleStore


class GenerationRunner(Runner):
    # A timed call is as many samples as the engine decodes together, each to its end: one is
    # enough, and can be long (Llama2-70B's 173 slots on an H200 take about a minute to their
    # longest output; three calls outlasted a short run's whole budget).
    min_timed_calls = 1

    def __init__(
        self, name: str, make_engine: Callable[[], DecoderEngine], store: PromptStore
    ) -> None:
        self.name = name
        self._make_engine = make_engine
        self._store = store
        self._engine: DecoderEngine | None = None

    @property
    def engine(self) -> DecoderEngine:
        if self._engine is None:
            raise RuntimeError("the runner is not active")
        return self._engine

    def activate(self) -> None:
        self._engine = self._make_engine()

    def deactivate(self) -> None:
        if isinstance(self._engine, EngineProcess):
            self._engine.close()  # its process holds a GPU: ended now, not when collected
        self._engine = None

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """Rows of prompt ids (PAD after each) -> rows of new tokens (PAD after each), under the
        store's shared settings."""
        prompts = [unpad(row) for row in batch]
        return _rows(generate(self.engine, prompts, self._store.config))

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        prompts = self._store
        outputs = generate(
            self.engine,
            [prompts.prompts[i] for i in indices],
            [prompts.config_of(i) for i in indices],
        )
        return _rows(outputs)


def _rows(outputs: Sequence[Sequence[int]]) -> npt.NDArray[np.int64]:
    width = max((len(out) for out in outputs), default=0)
    rows = np.full((len(outputs), width), PAD, np.int64)
    for i, out in enumerate(outputs):
        rows[i, : len(out)] = out
    return rows
