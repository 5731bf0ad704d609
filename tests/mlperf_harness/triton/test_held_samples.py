"""A server's held samples (--triton_samples staged), without a server: what a HOLD loads and tells
the runners, what a request naming samples computes on, and the digest both sides compare."""

from __future__ import annotations

import numpy as np
import pytest
from held_sample_support import SumRunner, data, store_of

from mlperf_harness.triton.held_samples import HeldSamples
from mlperf_harness.triton.served_model import samples_digest


def test_a_hold_loads_the_set_and_requests_compute_on_the_named_samples() -> None:
    samples = data(0)
    runner = SumRunner()
    held = HeldSamples(store_of(samples), [runner])
    digest = held.hold([7, 2, 5])
    assert runner.told == 1
    answered = np.asarray(held.infer(runner, np.array([5, 7, 5], dtype=np.int64)), np.float64)
    np.testing.assert_allclose(answered[:, 0], samples[[5, 7, 5]].reshape(3, -1).sum(axis=1))
    # The run's process, with its own copy of the same data and the same set, finds the same.
    mine = store_of(samples.copy())
    mine.load([7, 2, 5])
    assert bytes(digest) == bytes(samples_digest(mine, [7, 2, 5]))
    # A new set replaces the old one: its samples only.
    held.hold([1])
    assert runner.told == 2
    with pytest.raises(RuntimeError, match="never loaded"):
        held.infer(runner, np.array([7], dtype=np.int64))


def test_other_data_gives_another_digest() -> None:
    ours, theirs = store_of(data(0)), store_of(data(1))
    for store in (ours, theirs):
        store.load([0, 4, 9])
    assert bytes(samples_digest(ours, [0, 4, 9])) != bytes(samples_digest(theirs, [0, 4, 9]))
