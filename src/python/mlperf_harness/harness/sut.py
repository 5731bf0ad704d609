"""The system under test: LoadGen's queries -> batches -> worker threads -> runner -> completions.

One path serves every scenario; only the batch source differs (see batching.py). The per-sample work
is native (src/cpp/harness_native): LoadGen calls the batch source's C++ `put_queries` directly as
its issue callback, a worker waits for a batch without the GIL, the store gathers it in C++, and the
whole batch is completed in one C++-built `QuerySamplesComplete` call. Python runs once per batch:
the runner and the postprocessing. Workers run the runner without holding any harness lock, so a
runner that releases the GIL (onnxruntime, torch) overlaps with LoadGen's issue thread.

There is one worker thread per entry of `runners`. A CPU backend lists one runner several times
(threads sharing one session); a GPU backend lists one runner per GPU and stream, and whichever
worker is free takes the next batch, so every GPU stays busy.

`inline=True` (SingleStream, MultiStream: LoadGen sends the next query only once the last one is
answered, so there is never work to overlap) runs each query's batches with the first runner inside
the issue callback, on the thread LoadGen issues from: no hand-over to a worker thread, whose
wake-up would add to every query's latency.

`loadgen_path` (loadgen/paths.py) says which LoadGen the SUT answers: "python" (mlperf_loadgen,
whose issue callback is `issue_queries`) or "native" (the LoadGen compiled into the native module,
which puts queries into `batches` itself and runs `run_pending` after each inline query);
harness/loadgen_paths.run_under_loadgen runs either. On the native path an inline SUT may be given
`round_trips` (Runner.inline_round_trips): LoadGen's issue thread then answers each query's batches
in C++, launching the runner's CUDA graphs, with no Python at all per query.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import Batch, BatchSource
from mlperf_harness.harness.completion import complete, complete_native
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.loadgen.paths import LOADGEN_PATHS, NATIVE, PYTHON
from mlperf_harness.native import InlineRoundTrips

# Turns a batch of raw runner outputs into the per-sample response rows LoadGen logs.
Postprocess = Callable[[npt.NDArray[np.generic]], npt.NDArray[np.generic]]


@dataclass(frozen=True)
class SizedRows:
    """Responses whose lengths the outputs decide (RetinaNet's detections per image): rows of one
    width, and how many bytes of each row are the response."""

    rows: npt.NDArray[np.generic]
    row_bytes: npt.NDArray[np.int64]


# A batch's raw outputs and its sample indices -> its responses, each as long as it needs to be.
SizedPostprocess = Callable[[npt.NDArray[np.generic], Sequence[int]], SizedRows]


def responses(
    outputs: npt.NDArray[np.generic],
    indices: Sequence[int],
    postprocess: Postprocess,
    sized_postprocess: SizedPostprocess | None,
    response_bytes: npt.NDArray[np.int64] | None,
) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.integer[Any]] | None]:
    """A batch's response rows from its raw outputs, and how many bytes of each row are the
    response (None: all of it): the sized postprocessing's where the benchmark has one, else the
    postprocessing's rows, cut to `response_bytes` where the samples' responses are shorter. The
    direct harness and the Triton client (its raw outputs from the servers) answer alike."""
    if sized_postprocess is not None:
        sized = sized_postprocess(outputs, indices)
        return sized.rows, sized.row_bytes
    rows = postprocess(outputs)
    return rows, None if response_bytes is None else response_bytes[np.asarray(indices)]


def no_postprocess(outputs: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    return outputs


class HarnessSUT:
    def __init__(
        self,
        runners: Sequence[Runner],
        store: SampleStore,
        batches: BatchSource,
        postprocess: Postprocess = no_postprocess,
        *,
        inline: bool = False,
        response_bytes: npt.NDArray[np.int64] | None = None,
        hold_queries: bool = False,
        loadgen_path: str = PYTHON,
        round_trips: InlineRoundTrips | None = None,
        sized_postprocess: SizedPostprocess | None = None,
    ) -> None:
        """`response_bytes`: per sample index, how many bytes of its postprocessed row LoadGen
        gets (a prefix); None: the whole row. `hold_queries` (Offline): keep each issued query's
        list of LoadGen sample objects until the SUT closes, after LoadGen's timed run.
        `sized_postprocess`: used instead of `postprocess` where each response's length depends
        on the outputs (and its content on the sample index).

        Why: LoadGen's binding hands the issue callback a Python list with one object per sample
        and frees it, holding the GIL, as soon as the callback returns. Offline's one query holds
        every sample of the run, so that free took 50-60 ms at 8 simulated GPUs (2 s runs, 528k
        samples) during which no worker could start a batch: each GPU fell idle once (docs/
        scaling.md). Held, the list is freed outside the timing; the peak memory is the same (the
        list exists whole while the callback runs). Not for Server: its one-sample lists cost
        nothing to free, and a Python frame per query would cost its issue rate."""
        if not runners:
            raise ValueError("a harness needs at least one runner")
        if loadgen_path not in LOADGEN_PATHS:
            raise ValueError(f"loadgen_path must be one of {LOADGEN_PATHS}, got {loadgen_path!r}")
        if round_trips is not None and not (inline and loadgen_path == NATIVE):
            raise ValueError("round_trips answer inline queries of the native LoadGen only")
        self.loadgen_path = loadgen_path
        self.inline = inline
        self.round_trips = round_trips
        self._complete = complete_native if loadgen_path == NATIVE else complete
        self._store = store
        self._batches = batches
        self._postprocess = postprocess
        self._sized_postprocess = sized_postprocess
        self._response_bytes = response_bytes
        self._inline_runner = runners[0]
        self._workers = [
            threading.Thread(
                target=self._work, args=(runner,), name=f"harness-worker-{i}", daemon=True
            )
            for i, runner in enumerate(runners)
            if not inline
        ]
        self._failure: BaseException | None = None
        self._held: list[Sequence[Any]] = []  # issued query lists (hold_queries)
        # LoadGen's issue callback: the batch source's native put, no Python frame per query.
        self.issue_queries: Callable[[Sequence[Any]], None] = (
            self._not_for_mlperf_loadgen
            if loadgen_path == NATIVE
            else self._issue_inline
            if inline
            else self._issue_holding
            if hold_queries
            else batches.put_queries
        )

    @property
    def batches(self) -> BatchSource:
        """Where issued queries go (the native LoadGen puts them there itself)."""
        return self._batches

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
        self._held.clear()  # the issued lists go now, LoadGen's timing over (hold_queries)
        if self._failure is None and self.round_trips is not None and self.round_trips.failure:
            # Answered empty in C++ as _run answers a failed batch; the first error, raised here.
            self._failure = HarnessError(f"a round trip in C++ failed: {self.round_trips.failure}")
        if self._failure is not None and exc is None:
            raise RuntimeError("a harness worker failed") from self._failure

    def _work(self, runner: Runner) -> None:
        next_batch = self._batches.next_batch
        while (batch := next_batch()) is not None:
            self._run(runner, batch)

    def _issue_holding(self, query_samples: Sequence[Any]) -> None:
        self._batches.put_queries(query_samples)
        self._held.append(query_samples)

    def _issue_inline(self, query_samples: Sequence[Any]) -> None:
        self._batches.put_queries(query_samples)
        self.run_pending()

    def run_pending(self) -> None:
        """Inline: run the batches of the query just put, on the calling (LoadGen's) thread."""
        batches = self._batches
        while batches.pending and (batch := batches.next_batch()) is not None:
            self._run(self._inline_runner, batch)

    def _not_for_mlperf_loadgen(self, _query_samples: Sequence[Any]) -> None:
        raise RuntimeError(
            "this SUT completes into the native LoadGen: run it with run_under_loadgen, "
            "not under mlperf_loadgen"
        )

    def _run(self, runner: Runner, batch: Batch) -> None:
        try:
            indices = batch.sample_indices
            outputs = runner.infer_samples(self._store, indices)
            rows, row_bytes = responses(
                outputs, indices, self._postprocess, self._sized_postprocess, self._response_bytes
            )
            self._complete(batch, rows, row_bytes)
        except BaseException as error:
            # LoadGen would wait forever for these samples: record the failure, answer them
            # empty so the test can end, and re-raise in the main thread on exit.
            self._failure = self._failure or error
            self._complete(batch, np.empty((len(batch), 0), dtype=np.uint8))
