"""Batch sources the workers pull from: fixed batches (Offline, SingleStream, MultiStream) and the
Server scenario's dynamic batcher. Both are the native core's (src/cpp/harness_native): LoadGen's
query samples are read, queued and cut into batches in C++, and a worker waiting for a batch holds
no GIL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mlperf_harness import native

# Samples that go to the runner together: `response_ids` (LoadGen's QuerySample.id, echoed back on
# completion) and `sample_indices`, both lists of int in issue order; `len(batch)` samples.
Batch = native.Batch


class BatchSource(Protocol):
    def put(self, response_ids: Sequence[int], sample_indices: Sequence[int]) -> None: ...

    def put_queries(self, query_samples: Sequence[Any]) -> None:
        """LoadGen's issue_queries argument (QuerySample objects) as it comes."""

    def next_batch(self) -> Batch | None:
        """Block until a batch is ready; None once closed and drained."""

    def close(self) -> None: ...

    @property
    def pending(self) -> int:
        """Samples put and not yet taken by next_batch."""


class FixedBatches(native.FixedBatcher):
    """Cuts each issued query into batches of at most `batch_size` samples, in issue order; with
    `order_keys` (one per sample index, e.g. SampleStore.sample_lengths()), a query of more than
    one batch is stably sorted by its samples' keys first, smallest first (batcher.hpp): Offline's
    one query then runs as batches of samples of about the same length. Each response still goes
    to its own sample's id, so the order changes no result."""

    def __init__(
        self,
        batch_size: int,
        order_keys: Sequence[int] | npt.NDArray[np.integer[Any]] | None = None,
    ) -> None:
        keys = [] if order_keys is None else np.asarray(order_keys, np.int64).tolist()
        super().__init__(batch_size, keys)


class DynamicBatcher(native.DynamicBatcher):
    """Server batching: a batch leaves when it is full or when its oldest sample has waited `timeout_s`
    (NVIDIA's `deque_timeout_usec`), whichever comes first. Closing sends what is pending. With
    `bucket_of` (a bucket number per sample index: `length_buckets`), one such queue per bucket, and
    a batch holds one bucket's samples only (batcher.hpp)."""

    def __init__(
        self,
        batch_size: int,
        timeout_s: float,
        bucket_of: Sequence[int] | npt.NDArray[np.integer[Any]] | None = None,
    ) -> None:
        if timeout_s < 0:
            raise ValueError(f"timeout_s must not be negative, got {timeout_s}")
        buckets = [] if bucket_of is None else np.asarray(bucket_of, np.int64).tolist()
        super().__init__(batch_size, round(timeout_s * 1e9), buckets)


def length_buckets(lengths: npt.NDArray[np.integer[Any]], count: int) -> npt.NDArray[np.int64]:
    """Each sample index's bucket (0 .. count - 1) when the samples are split by length into
    `count` ranges holding an equal share of them: LoadGen draws every loaded sample alike, so each
    Server queue then fills at the same rate. Shortest first; equal lengths share a bucket (a range
    is whole lengths), so a length held by many samples may leave a bucket larger than its share."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    values = np.asarray(lengths, np.int64)
    if len(values) == 0:
        return np.zeros(0, np.int64)
    # Each sample's rank among all, by length with ties at their first rank, cut into equal shares.
    ordered = np.sort(values)
    first_rank = np.searchsorted(ordered, values, side="left")
    buckets: npt.NDArray[np.int64] = (first_rank * count // len(values)).astype(np.int64)
    return buckets
