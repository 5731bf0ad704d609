"""The batches torch_raw times and profiles for Offline (no torch needed): the query cut in length
order exactly as the harness's batch source cuts it, every sample as often, and the profile's
median batch of it; and the whole query of a run, each of its batches once in the run's order."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.raw_timing import (
    SEED,
    length_ordered_batches,
    offline_query_samples,
    runner_throughput,
    whole_query_throughput,
)
from mlperf_harness.benchmarks.rnnt.torch_engine import fills_padding
from mlperf_harness.benchmarks.rnnt.torch_raw import median_length_batch
from mlperf_harness.harness.sample_store import EmptySampleStore, SampleStore


def test_length_ordered_batches_hold_each_sample_alike_sorted_by_length() -> None:
    lengths = np.random.default_rng(3).integers(34, 500, 50).astype(np.int64)
    order = np.random.default_rng(SEED).permutation(50)
    rows = length_ordered_batches(order, 8, lengths)
    assert rows.shape == (25, 8)  # lcm(50, 8) = 200 samples: each sample 4 times
    assert np.array_equal(np.bincount(rows.ravel(), minlength=50), np.full(50, 4))
    by_longest = rows[np.argsort(lengths[rows].max(axis=1), kind="stable")]
    spans = lengths[by_longest]
    assert (spans.max(axis=1)[:-1] <= spans.min(axis=1)[1:]).all()  # no two batches interleave
    # shuffled: a timing cut short takes short and long batches alike
    assert not np.array_equal(rows, by_longest)


def test_the_profiles_length_ordered_batch_is_the_median_one() -> None:
    lengths = np.arange(100, 132, dtype=np.int64)
    chosen = median_length_batch(range(32), 8, lengths)
    assert len(chosen) == 8
    assert sorted(lengths[chosen].tolist()) == list(range(116, 124))


def test_length_ordered_batches_fill_their_padding_and_arrival_ones_may_not() -> None:
    lengths = np.random.default_rng(5).integers(34, 500, 400).astype(np.int64)
    order = np.random.default_rng(SEED).permutation(400)
    for row in length_ordered_batches(order, 64, lengths):
        assert fills_padding(lengths[row], int(lengths[row].max()))
    assert not fills_padding(np.array([500, 40, 60], np.int64), 500)


class _Recording(Runner):
    """A runner that keeps the batches it was given, in order (no model: the order is the test)."""

    name = "recording"

    def __init__(self, calls: list[list[int]]) -> None:
        self.calls = calls

    def activate(self) -> None:
        pass

    def deactivate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        raise AssertionError("whole_query_throughput calls infer_samples")

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        self.calls.append(list(indices))
        return np.zeros(len(indices), np.int64)


def test_the_whole_query_runs_each_of_its_batches_once_in_the_runs_order() -> None:
    lengths = np.random.default_rng(7).integers(34, 500, 30).astype(np.int64)
    store = EmptySampleStore(30, 30)
    samples = offline_query_samples(100.0, 0.5)  # LoadGen's query of a 0.5 s run at 100/s
    assert samples == 55
    calls: list[list[int]] = []  # one runner: its calls are the order the batches were taken in
    record = whole_query_throughput([_Recording(calls)], store, range(30), 8, samples, lengths)
    assert record["samples"] == 55 and record["batches"] == 7 == len(calls)
    assert sorted(len(call) for call in calls) == [7, 8, 8, 8, 8, 8, 8]
    # every sample as LoadGen draws them (55 of a shuffle of 30, repeated), none lost or doubled
    taken = np.bincount(np.concatenate(calls), minlength=30)
    assert sorted(set(taken.tolist())) == [1, 2] and taken.sum() == 55
    # taken in the run's order: shortest first, no batch's lengths interleaving the next one's
    spans = [lengths[call] for call in calls]
    assert all(a.max() <= b.min() for a, b in itertools.pairwise(spans))
    assert record["samples_per_second"] > 0 and record["latency_ms"]["p50"] >= 0
    # several runners share the same batches, each taken once
    shared: list[list[int]] = []
    runners = [_Recording(shared) for _ in range(3)]
    whole_query_throughput(runners, store, range(30), 8, samples, lengths)
    assert sorted(map(sorted, shared)) == sorted(map(sorted, calls))


def test_a_timed_pass_takes_batches_until_its_seconds_are_up() -> None:
    lengths = np.random.default_rng(7).integers(34, 500, 30).astype(np.int64)
    store = EmptySampleStore(30, 30)
    for chosen in (None, lengths):  # arrival order, then Offline's batches in length order
        calls: list[list[int]] = []
        record = runner_throughput([_Recording(calls), _Recording(calls)], store, range(30), 8,
                                   0.05, chosen, warm_seconds=0.01)  # fmt: skip
        assert calls and all(len(call) == 8 for call in calls)
        assert record["samples_per_second"] > 0 and record["latency_ms"]["p50"] >= 0


class _SlowFirstCall(_Recording):
    """A runner whose first call takes SLOW_FIRST_S (a CUDA graph captured on first meeting a
    batch's shape), every later one about a millisecond."""

    SLOW_FIRST_S = 0.3

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        time.sleep(self.SLOW_FIRST_S if not self.calls else 0.001)
        return super().infer_samples(store, indices)


def test_the_timed_pass_follows_an_untimed_warm_pass() -> None:
    """A first call's capture lands in the warm pass, not in the timed calls' percentiles; with no
    warm pass it is the slowest timed call."""
    store = EmptySampleStore(30, 30)
    slow_ms = _SlowFirstCall.SLOW_FIRST_S * 1e3
    warmed = runner_throughput([_SlowFirstCall([])], store, range(30), 8, 0.1, warm_seconds=0.35)
    assert warmed["latency_ms"]["p99"] < slow_ms / 3
    cold = runner_throughput([_SlowFirstCall([])], store, range(30), 8, 0.1, warm_seconds=0)
    assert cold["latency_ms"]["p99"] >= slow_ms
