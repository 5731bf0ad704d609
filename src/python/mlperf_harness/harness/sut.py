"""The system under test: LoadGen's queries -> batches -> worker threads -> runner -> completions.

One path serves every scenario; only the batch source differs (see batching.py). Workers run the
runner without holding any harness lock, so a runner that releases the GIL (onnxruntime, torch)
overlaps with LoadGen's issue thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.harness.batching import BatchSource
from mlperf_harness.harness.completion import complete_batch
from mlperf_harness.harness.sample_store import SampleStore

# Turns a batch of raw runner outputs into the per-sample response rows LoadGen logs.
Postprocess = Callable[[npt.NDArray[np.generic]], npt.NDArray[np.generic]]


def no_postprocess(outputs: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    return outputs


class HarnessSUT:
    def __init__(
        self,
        runner: Runner,
        store: SampleStore,
        batches: BatchSource,
        worker_count: int = 1,
        postprocess: Postprocess = no_postprocess,
    ) -> None:
        self._runner = runner
        self._store = store
        self._batches = batches
        self._postprocess = postprocess
        self._workers = [
            threading.Thread(target=self._work, name=f"harness-worker-{i}", daemon=True)
            for i in range(worker_count)
        ]
        self._failure: BaseException | None = None

    # LoadGen callbacks -------------------------------------------------------------------------
    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        self._batches.put([q.id for q in query_samples], [q.index for q in query_samples])

    def flush_queries(self) -> None:
        pass  # batches leave on size or timeout; nothing is held back waiting for a flush

    # Lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> HarnessSUT:
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._batches.close()
        for worker in self._workers:
            worker.join()
        if self._failure is not None and exc is None:
            raise RuntimeError("a harness worker failed") from self._failure

    def _work(self) -> None:
        while (batch := self._batches.next_batch()) is not None:
            try:
                outputs = self._runner.infer(self._store.gather(batch.sample_indices))
                complete_batch(batch.response_ids, self._postprocess(outputs))
            except BaseException as error:
                # LoadGen would wait forever for these samples: record the failure, answer them
                # empty so the test can end, and re-raise in the main thread on exit.
                self._failure = self._failure or error
                complete_batch(batch.response_ids, np.empty((len(batch.response_ids), 0)))
