"""The native batch sources against their specification and against the Python code they replaced."""

from __future__ import annotations

import random
import threading
import time

import mlperf_loadgen as lg
import pytest

from mlperf_harness import native
from mlperf_harness.benchmarks.harness_overhead import python_baseline


def drain(source: native.FixedBatcher | native.DynamicBatcher) -> list[native.Batch]:
    batches = []
    while (batch := source.next_batch()) is not None:
        batches.append(batch)
    return batches


def test_fixed_batches_cut_each_query_separately() -> None:
    source = native.FixedBatcher(4)
    source.put([1, 2, 3, 4, 5, 6], [10, 20, 30, 40, 50, 60])  # 4 + 2
    source.put([7, 8, 9], [70, 80, 90])  # never merged with the 2 before it
    source.close()
    assert [b.response_ids for b in drain(source)] == [[1, 2, 3, 4], [5, 6], [7, 8, 9]]


@pytest.mark.parametrize(
    ("count", "size"), [(1, 1), (10, 3), (1000, 7), (1024, 1024), (1025, 1024)]
)
def test_fixed_batches_match_the_python_version(count: int, size: int) -> None:
    ids = random.Random(count).sample(range(10**9), count)
    indices = [i % 97 for i in range(count)]
    ours, theirs = native.FixedBatcher(size), python_baseline.FixedBatches(size)
    for source in (ours, theirs):
        source.put(ids, indices)
        source.close()
    expected = []
    while (batch := theirs.next_batch()) is not None:
        expected.append((batch.response_ids, batch.sample_indices))
    assert [(b.response_ids, b.sample_indices) for b in drain(ours)] == expected


def test_empty_queries_give_no_batches() -> None:
    for source in (native.FixedBatcher(4), native.DynamicBatcher(4, 1_000)):
        source.put([], [])
        source.put_queries([])
        assert source.pending == 0
        source.close()
        assert source.next_batch() is None


def test_put_queries_reads_loadgen_query_samples() -> None:
    samples = [lg.QuerySample(2**63 + i, 1000 + i) for i in range(5)]
    source = native.FixedBatcher(3)
    source.put_queries(samples)
    source.close()
    batches = drain(source)
    assert [b.response_ids for b in batches] == [
        [2**63, 2**63 + 1, 2**63 + 2],
        [2**63 + 3, 2**63 + 4],
    ]
    assert [b.sample_indices for b in batches] == [[1000, 1001, 1002], [1003, 1004]]


def test_put_queries_accepts_any_objects_with_id_and_index() -> None:
    class Sample:
        def __init__(self, id: int, index: int) -> None:
            self.id, self.index = id, index

    source = native.DynamicBatcher(8, 0)
    source.put_queries([Sample(1, 2), Sample(3, 4)])
    assert source.next_batch() == native.Batch([1, 3], [2, 4])


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError):
        native.FixedBatcher(4).put([1, 2], [1])
    with pytest.raises(TypeError):
        native.FixedBatcher(4).put(["a"], [1])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        native.FixedBatcher(0)
    with pytest.raises(ValueError):
        native.DynamicBatcher(0, 10)
    closed = native.DynamicBatcher(2, 10)
    closed.close()
    with pytest.raises(RuntimeError):
        closed.put([1], [1])


def test_dynamic_batcher_uneven_sizes_full_batches_then_the_rest_on_timeout() -> None:
    # Margins in tenths of a second: a loaded or slower machine's scheduling cannot eat them.
    batcher = native.DynamicBatcher(4, 600_000_000)  # 600 ms
    batcher.put(list(range(10)), list(range(10)))
    started = time.monotonic()
    first, second = batcher.next_batch(), batcher.next_batch()
    assert time.monotonic() - started < 0.4  # full batches do not wait
    assert first is not None and second is not None
    assert (first.response_ids, second.response_ids) == ([0, 1, 2, 3], [4, 5, 6, 7])
    third = batcher.next_batch()
    waited = time.monotonic() - started
    assert third == native.Batch([8, 9], [8, 9])
    assert 0.55 <= waited < 5.0  # the remainder left on the timeout


def test_dynamic_batcher_timeout_under_no_load() -> None:
    batcher = native.DynamicBatcher(8, 100_000_000)  # 100 ms
    batcher.put([7], [70])
    started = time.monotonic()
    assert batcher.next_batch() == native.Batch([7], [70])
    assert 0.08 <= time.monotonic() - started < 2.0


def test_dynamic_batcher_zero_timeout_sends_at_once() -> None:
    batcher = native.DynamicBatcher(8, 0)
    batcher.put([1, 2], [1, 2])
    started = time.monotonic()
    assert batcher.next_batch() == native.Batch([1, 2], [1, 2])
    assert time.monotonic() - started < 0.5


def test_dynamic_batcher_timeout_counts_from_the_oldest_sample() -> None:
    batcher = native.DynamicBatcher(8, 1_000_000_000)
    batcher.put([1], [1])
    time.sleep(0.5)
    batcher.put([2], [2])
    started = time.monotonic()
    assert batcher.next_batch() == native.Batch([1, 2], [1, 2])
    # Only the oldest sample's remaining ~0.5 s, not the newest's 1 s.
    assert time.monotonic() - started < 0.9


def test_a_full_batch_wakes_a_waiting_worker_before_the_timeout() -> None:
    batcher = native.DynamicBatcher(3, 60_000_000_000)  # a minute: only size can release it
    got: list[native.Batch | None] = []
    worker = threading.Thread(target=lambda: got.append(batcher.next_batch()))
    worker.start()
    time.sleep(0.05)
    batcher.put([1, 2, 3], [4, 5, 6])
    worker.join(timeout=5)
    assert got == [native.Batch([1, 2, 3], [4, 5, 6])]


def test_close_wakes_every_waiting_worker_and_flushes() -> None:
    for source in (native.FixedBatcher(8), native.DynamicBatcher(8, 60_000_000_000)):
        results: list[native.Batch | None] = []

        def wait(
            source: native.FixedBatcher | native.DynamicBatcher = source,
            results: list[native.Batch | None] = results,
        ) -> None:
            results.append(source.next_batch())

        workers = [threading.Thread(target=wait) for _ in range(3)]
        for worker in workers:
            worker.start()
        time.sleep(0.05)
        source.close()
        for worker in workers:
            worker.join(timeout=5)
        assert not any(w.is_alive() for w in workers) and results == [None] * 3
    pending = native.DynamicBatcher(8, 60_000_000_000)
    pending.put([5, 6], [5, 6])
    pending.close()
    assert drain(pending) == [native.Batch([5, 6], [5, 6])]  # closing sends what is pending


@pytest.mark.parametrize("kind", ["fixed", "dynamic"])
def test_concurrent_workers_get_every_sample_exactly_once(kind: str) -> None:
    source: native.FixedBatcher | native.DynamicBatcher = (
        native.FixedBatcher(5) if kind == "fixed" else native.DynamicBatcher(5, 200_000)
    )
    seen: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        while (batch := source.next_batch()) is not None:
            assert 1 <= len(batch) <= 5
            with lock:
                seen.extend(batch.response_ids)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for start in range(0, 20_000, 7):  # queries of 7 samples: sizes that do not divide evenly
        ids = list(range(start, min(start + 7, 20_000)))
        source.put(ids, ids)
    source.close()
    for worker in workers:
        worker.join(timeout=30)
    assert sorted(seen) == list(range(20_000))


def test_batch_values() -> None:
    batch = native.Batch([2**64 - 1, 0], [-1, 5])
    assert batch.response_ids == [2**64 - 1, 0]
    assert batch.sample_indices == [-1, 5]
    assert len(batch) == 2
    assert batch != native.Batch([0, 0], [-1, 5])
    assert repr(native.Batch([1], [2])) == "Batch([1], [2])"


def test_fixed_batches_sort_a_query_of_several_batches_by_key() -> None:
    keys = [50, 10, 40, 10, 30, 20]  # per sample index
    source = native.FixedBatcher(2, keys)
    assert source.ordered
    source.put([100, 101, 102, 103, 104, 105, 106], [0, 1, 2, 3, 4, 5, 9])  # 9: no key, last
    source.put([200, 201], [0, 1])  # one batch: issue order kept
    source.close()
    batches = [(b.response_ids, b.sample_indices) for b in drain(source)]
    assert batches == [
        ([101, 103], [1, 3]),  # equal keys keep their issue order
        ([105, 104], [5, 4]),
        ([102, 100], [2, 0]),
        ([106], [9]),
        ([200, 201], [0, 1]),
    ]


def test_ordered_batches_hold_every_sample_once_with_its_own_id() -> None:
    rng = random.Random(7)
    keys = [rng.randrange(500) for _ in range(300)]
    samples = [lg.QuerySample(2**40 + i, rng.randrange(300)) for i in range(5000)]
    source = native.FixedBatcher(64, keys)
    source.put_queries(samples)
    source.close()
    taken = [
        (i, s) for b in drain(source) for i, s in zip(b.response_ids, b.sample_indices, strict=True)
    ]
    assert sorted(taken) == sorted((q.id, q.index) for q in samples)
    assert [keys[s] for _, s in taken] == sorted(keys[q.index] for q in samples)
    assert not native.FixedBatcher(64).ordered


# The Server batcher with a bucket per sample index (RNN-T's utterances by length range).
BUCKET_OF = [0, 1, 0, 1, 2, 2]  # sample index -> its queue


def test_bucketed_batches_hold_one_bucket_each() -> None:
    batcher = native.DynamicBatcher(2, 60_000_000_000, BUCKET_OF)  # a minute: size releases
    assert batcher.buckets == 3 and native.DynamicBatcher(2, 0).buckets == 1
    batcher.put([10, 11, 12, 13], [0, 1, 4, 2])  # bucket 0 fills with its second sample
    started = time.monotonic()
    assert batcher.next_batch() == native.Batch([10, 13], [0, 2])
    assert time.monotonic() - started < 0.5  # a full bucket does not wait on the others
    assert batcher.pending == 2
    batcher.put([14], [3])  # bucket 1 fills: 11 and 14, though 12 (bucket 2) came first
    assert batcher.next_batch() == native.Batch([11, 14], [1, 3])
    batcher.close()
    assert drain(batcher) == [native.Batch([12], [4])]


def test_bucketed_full_queues_go_oldest_first() -> None:
    batcher = native.DynamicBatcher(2, 60_000_000_000, BUCKET_OF)
    batcher.put([20], [4])  # bucket 2's first sample
    time.sleep(0.01)
    batcher.put([21], [1])  # bucket 1's, later
    batcher.put([22, 23], [3, 5])  # then both are full: bucket 2's oldest came first
    assert batcher.next_batch() == native.Batch([20, 23], [4, 5])
    assert batcher.next_batch() == native.Batch([21, 22], [1, 3])


def test_a_timed_out_bucket_goes_before_a_younger_full_one() -> None:
    batcher = native.DynamicBatcher(2, 300_000_000, BUCKET_OF)  # 300 ms
    batcher.put([50], [4])  # bucket 2 waits alone
    time.sleep(0.4)  # past its timeout, before any worker asked
    batcher.put([51, 52], [0, 2])  # bucket 0 full, but younger
    assert batcher.next_batch() == native.Batch([50], [4])
    assert batcher.next_batch() == native.Batch([51, 52], [0, 2])


def test_each_bucket_times_out_on_its_own_oldest_sample() -> None:
    timeout = 0.6
    batcher = native.DynamicBatcher(8, round(timeout * 1e9), BUCKET_OF)
    before_1 = time.monotonic()
    batcher.put([30], [1])  # bucket 1
    time.sleep(0.3)
    before_0 = time.monotonic()
    batcher.put([31, 32], [0, 2])  # bucket 0, at least 0.3 s later
    after_0 = time.monotonic()
    first = batcher.next_batch()
    first_at = time.monotonic()
    second = batcher.next_batch()
    second_at = time.monotonic()
    # Each bucket leaves at its own oldest sample's deadline, measured from when it was put (not
    # from how long the sleep took on this machine): bucket 1 neither waits for bucket 0's deadline
    # nor leaves with its samples.
    assert first == native.Batch([30], [1]) and second == native.Batch([31, 32], [0, 2])
    assert before_1 + timeout <= first_at < after_0 + timeout
    assert before_0 + timeout <= second_at < before_0 + 5.0


def test_a_sample_past_the_buckets_waits_in_the_last() -> None:
    batcher = native.DynamicBatcher(2, 60_000_000_000, BUCKET_OF)
    batcher.put([40, 41], [5, 99])  # 99: past the table, so bucket 2 with sample 5
    assert batcher.next_batch() == native.Batch([40, 41], [5, 99])


def test_bucketed_batches_give_every_sample_once_to_concurrent_workers() -> None:
    rng = random.Random(3)
    bucket_of = [rng.randrange(4) for _ in range(100)]
    source = native.DynamicBatcher(6, 200_000, bucket_of)
    taken: list[tuple[int, int]] = []
    lock = threading.Lock()

    def work() -> None:
        while (batch := source.next_batch()) is not None:
            assert 1 <= len(batch) <= 6
            assert len({bucket_of[i] for i in batch.sample_indices}) == 1
            with lock:
                taken.extend(zip(batch.response_ids, batch.sample_indices, strict=True))

    workers = [threading.Thread(target=work) for _ in range(3)]
    for worker in workers:
        worker.start()
    samples = [lg.QuerySample(i, rng.randrange(100)) for i in range(10_000)]
    for start in range(0, len(samples), 5):
        source.put_queries(samples[start : start + 5])
    source.close()
    for worker in workers:
        worker.join(timeout=30)
    assert sorted(taken) == sorted((q.id, q.index) for q in samples)


def test_negative_buckets_are_rejected() -> None:
    with pytest.raises(ValueError, match="bucket"):
        native.DynamicBatcher(2, 10, [0, -1])
