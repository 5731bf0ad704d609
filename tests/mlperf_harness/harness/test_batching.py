from __future__ import annotations

import threading
import time

import numpy as np

from mlperf_harness.harness.batching import Batch, DynamicBatcher, FixedBatches


def test_fixed_batches_split_unevenly_in_order() -> None:
    source = FixedBatches(batch_size=4)
    source.put(list(range(10)), list(range(100, 110)))
    source.close()
    batches = []
    while (batch := source.next_batch()) is not None:
        batches.append(batch)
    assert [b.response_ids for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[-1].sample_indices == [108, 109]


def test_fixed_batches_empty_query_gives_no_batch() -> None:
    source = FixedBatches(batch_size=4)
    source.put([], [])
    source.close()
    assert source.next_batch() is None


def test_dynamic_batcher_dispatches_full_batches_at_once() -> None:
    batcher = DynamicBatcher(batch_size=3, timeout_s=10.0)
    batcher.put([1, 2, 3, 4], [10, 20, 30, 40])
    started = time.monotonic()
    batch = batcher.next_batch()
    assert batch == Batch([1, 2, 3], [10, 20, 30])
    assert time.monotonic() - started < 1.0  # did not wait for the 10 s timeout


def test_dynamic_batcher_timeout_releases_a_partial_batch_under_no_load() -> None:
    batcher = DynamicBatcher(batch_size=8, timeout_s=0.05)
    batcher.put([7], [70])
    started = time.monotonic()
    batch = batcher.next_batch()
    waited = time.monotonic() - started
    assert batch == Batch([7], [70])
    assert 0.03 <= waited < 1.0


def test_dynamic_batcher_timeout_counts_from_the_oldest_sample() -> None:
    batcher = DynamicBatcher(batch_size=8, timeout_s=1.0)
    batcher.put([1], [1])
    time.sleep(0.5)
    batcher.put([2], [2])
    started = time.monotonic()
    batch = batcher.next_batch()
    assert batch == Batch([1, 2], [1, 2])
    # Only the first sample's remaining ~0.5 s, not the second's 1 s.
    assert time.monotonic() - started < 0.9


def test_dynamic_batcher_close_wakes_waiting_worker_and_drains() -> None:
    batcher = DynamicBatcher(batch_size=8, timeout_s=60.0)
    results: list[Batch | None] = []
    worker = threading.Thread(target=lambda: results.extend([batcher.next_batch()]))
    worker.start()
    time.sleep(0.05)
    batcher.close()
    worker.join(timeout=5)
    assert not worker.is_alive() and results == [None]
    batcher2 = DynamicBatcher(batch_size=8, timeout_s=60.0)
    batcher2.put([5, 6], [5, 6])
    batcher2.close()
    assert batcher2.next_batch() == Batch([5, 6], [5, 6])  # closing flushes what is pending
    assert batcher2.next_batch() is None


def test_fixed_batches_take_numpy_order_keys() -> None:
    source = FixedBatches(batch_size=2, order_keys=np.array([3, 1, 2], np.int64))
    source.put([7, 8, 9], [0, 1, 2])
    source.close()
    assert [b.sample_indices for b in iter(source.next_batch, None)] == [[1, 2], [0]]
