"""The batches torch_raw times and profiles for Offline (no torch needed): the query cut in length
order exactly as the harness's batch source cuts it, every sample as often, and the profile's
median batch of it."""

from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.raw_timing import SEED, length_ordered_batches
from mlperf_harness.benchmarks.rnnt.torch_engine import fills_padding
from mlperf_harness.benchmarks.rnnt.torch_raw import median_length_batch


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
