"""Batch sources the workers pull from: fixed batches (Offline, SingleStream, MultiStream) and the
Server scenario's dynamic batcher."""

from __future__ import annotations

import abc
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Batch:
    response_ids: list[int]  # LoadGen's QuerySample.id, echoed back on completion
    sample_indices: list[int]


class BatchSource(abc.ABC):
    @abc.abstractmethod
    def put(self, response_ids: Sequence[int], sample_indices: Sequence[int]) -> None: ...

    @abc.abstractmethod
    def next_batch(self) -> Batch | None:
        """Block until a batch is ready; None once closed and drained."""

    @abc.abstractmethod
    def close(self) -> None: ...


class FixedBatches(BatchSource):
    """Cuts each issued query into batches of at most `batch_size` samples, in issue order."""

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


class DynamicBatcher(BatchSource):
    """Server batching: a batch leaves when it is full or when its oldest sample has waited `timeout_s`
    (NVIDIA's `deque_timeout_usec`), whichever comes first."""

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
            self._cond.notify()  # more is waiting: wake another worker
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
