"""The harness's hot loops as they were in pure Python, before src/cpp/harness_native: kept only so
that `measure.py` can put "before" and "after" side by side in one run. Nothing else imports this.

Same behaviour as the native versions (tests/mlperf_harness/native compares them): batches cut per
query or by size/timeout, one `QuerySamplesComplete` per batch, numpy fancy-indexing gathers, and
NVIDIA's int8 quantizer in numpy.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.harness.sample_store import SampleStore


@dataclass(frozen=True)
class Batch:
    response_ids: list[int]
    sample_indices: list[int]


class FixedBatches:
    def __init__(self, batch_size: int) -> None:
        self._batch_size = batch_size
        self._ready: deque[Batch] = deque()
        self._closed = False
        self._cond = threading.Condition()

    def put(self, response_ids: Sequence[int], sample_indices: Sequence[int]) -> None:
        size = self._batch_size
        batches = [
            Batch(list(response_ids[i : i + size]), list(sample_indices[i : i + size]))
            for i in range(0, len(response_ids), size)
        ]
        with self._cond:
            self._ready.extend(batches)
            self._cond.notify(len(batches))

    def next_batch(self) -> Batch | None:
        with self._cond:
            while not self._ready:
                if self._closed:
                    return None
                self._cond.wait()
            return self._ready.popleft()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class DynamicBatcher:
    def __init__(self, batch_size: int, timeout_s: float) -> None:
        self._batch_size = batch_size
        self._timeout_s = timeout_s
        self._ids: deque[int] = deque()
        self._indices: deque[int] = deque()
        self._arrivals: deque[float] = deque()
        self._closed = False
        self._cond = threading.Condition()

    def put(self, response_ids: Sequence[int], sample_indices: Sequence[int]) -> None:
        now = time.monotonic()
        with self._cond:
            self._ids.extend(response_ids)
            self._indices.extend(sample_indices)
            self._arrivals.extend([now] * len(response_ids))
            self._cond.notify()

    def _take(self, count: int) -> Batch:
        ids = [self._ids.popleft() for _ in range(count)]
        indices = [self._indices.popleft() for _ in range(count)]
        for _ in range(count):
            self._arrivals.popleft()
        if self._ids:
            self._cond.notify()
        return Batch(ids, indices)

    def next_batch(self) -> Batch | None:
        with self._cond:
            while True:
                pending = len(self._ids)
                if pending >= self._batch_size:
                    return self._take(self._batch_size)
                if pending:
                    wait_s = self._arrivals[0] + self._timeout_s - time.monotonic()
                    if wait_s <= 0 or self._closed:
                        return self._take(pending)
                    self._cond.wait(wait_s)
                elif self._closed:
                    return None
                else:
                    self._cond.wait()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


BatchSource = FixedBatches | DynamicBatcher


def complete_batch(response_ids: Sequence[int], outputs: npt.NDArray[np.generic]) -> None:
    rows = np.ascontiguousarray(outputs).reshape(len(response_ids), -1)
    row_bytes = rows.shape[1] * rows.itemsize
    base = rows.ctypes.data if row_bytes else 0
    responses = [
        lg.QuerySampleResponse(rid, base + i * row_bytes if row_bytes else 0, row_bytes)
        for i, rid in enumerate(response_ids)
    ]
    lg.QuerySamplesComplete(responses)


def gather(
    data: npt.NDArray[np.generic], slot_of: npt.NDArray[np.int64], indices: Sequence[int]
) -> npt.NDArray[np.generic]:
    slots = slot_of[np.asarray(indices, dtype=np.int64)]
    if (slots < 0).any():
        raise RuntimeError("LoadGen asked for a sample that was never loaded")
    rows: npt.NDArray[np.generic] = data[slots]
    return rows


def quantize_int8_linear(chw: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    return np.clip(chw, -128.0, 127.0).astype(np.int8, order="C")


class PythonSUT:
    """The SUT before the native core: issue_queries and the worker loop in Python."""

    def __init__(
        self, runner: Runner, store: SampleStore, batches: BatchSource, worker_count: int = 1
    ) -> None:
        self._runner = runner
        self._store = store
        self._batches = batches
        self._workers = [
            threading.Thread(target=self._work, daemon=True) for _ in range(worker_count)
        ]

    def issue_queries(self, query_samples: Sequence[Any]) -> None:
        self._batches.put([q.id for q in query_samples], [q.index for q in query_samples])

    def flush_queries(self) -> None:
        pass

    def start(self) -> None:
        for worker in self._workers:
            worker.start()

    def stop(self) -> None:
        self._batches.close()
        for worker in self._workers:
            worker.join()

    def _work(self) -> None:
        while (batch := self._batches.next_batch()) is not None:
            outputs = self._runner.infer(self._store.gather(batch.sample_indices))
            complete_batch(batch.response_ids, outputs)
