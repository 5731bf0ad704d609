from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from mlperf_harness.harness.batching import Batch, DynamicBatcher, FixedBatches, length_buckets


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


def test_length_buckets_split_the_samples_into_equal_shares_by_length() -> None:
    lengths = np.array([80, 10, 70, 20, 60, 30, 50, 40], np.int64)
    buckets = length_buckets(lengths, 4)
    assert buckets.tolist() == [3, 0, 3, 0, 2, 1, 2, 1]
    assert length_buckets(lengths, 1).tolist() == [0] * 8
    # As many buckets as samples: one each; more than samples leave some empty, in order.
    assert length_buckets(lengths, 8).tolist() == [7, 0, 6, 1, 5, 2, 4, 3]
    many = length_buckets(lengths, 20)
    assert many.max() < 20 and np.all(np.diff(many[np.argsort(lengths)]) > 0)
    assert length_buckets(np.zeros(0, np.int64), 3).tolist() == []


def test_length_buckets_keep_equal_lengths_together() -> None:
    lengths = np.array([5, 9, 9, 9, 9, 9, 1, 2], np.int64)  # a length most samples have
    buckets = length_buckets(lengths, 4)
    assert len({int(buckets[i]) for i in (1, 2, 3, 4, 5)}) == 1
    # Longer is never in an earlier bucket.
    order = np.argsort(lengths, kind="stable")
    assert np.all(np.diff(buckets[order]) >= 0)


def test_length_buckets_refuse_no_buckets() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        length_buckets(np.array([1, 2]), 0)


def test_dynamic_batcher_takes_numpy_buckets() -> None:
    lengths = np.array([300, 100, 310, 90], np.int64)
    source = DynamicBatcher(2, 60.0, length_buckets(lengths, 2))
    source.put([1, 2, 3, 4], [0, 1, 2, 3])  # arrival order mixes long and short
    batches = [source.next_batch(), source.next_batch()]
    assert sorted(b.sample_indices for b in batches if b is not None) == [[0, 2], [1, 3]]
