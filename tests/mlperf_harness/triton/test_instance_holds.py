"""A HOLD across model instances that are processes of their own (--triton_runtime python_backend):
the instance that received it answers only once every other instance holds the same set; other
data, or an instance that cannot hold it, fails the HOLD with one line. Instances are threads here,
each with its own store, as the processes have; the workspace is a real directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from held_sample_support import SumRunner, data, store_of

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.triton import instance_holds
from mlperf_harness.triton.batch_gate import BatchGate
from mlperf_harness.triton.held_samples import HeldSamples
from mlperf_harness.triton.instance_holds import InstanceHolds


class Instance:
    def __init__(self, store: PreloadedSampleStore, directory: Path, index: int, count: int):
        self.runner = SumRunner()
        self.store = store
        self.holds = InstanceHolds(
            HeldSamples(store, [self.runner]), directory, index, count, BatchGate().hold
        )


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[list[Instance]]:
    samples = data(0)
    made = [Instance(store_of(samples.copy()), tmp_path, index, 3) for index in range(3)]
    for instance in made:
        instance.holds.start()
    yield made
    for instance in made:
        instance.holds.stop()


def test_a_hold_is_answered_once_every_instance_holds_the_set(instances: list[Instance]) -> None:
    digest = instances[1].holds.hold([7, 2, 5])
    for instance in instances:
        assert instance.runner.told == 1
        answered = instance.holds.infer(instance.runner, np.array([5, 7], dtype=np.int64))
        np.testing.assert_allclose(
            np.asarray(answered, np.float64)[:, 0],
            data(0)[[5, 7]].reshape(2, -1).sum(axis=1),
            rtol=1e-6,
        )
    # A second HOLD, from another instance, replaces the set everywhere.
    assert instances[2].holds.hold([1, 2]).tobytes() != digest.tobytes()
    assert [instance.runner.told for instance in instances] == [2, 2, 2]


def test_an_instance_of_other_data_fails_the_hold(tmp_path: Path) -> None:
    made = [Instance(store_of(data(seed)), tmp_path, index, 2) for index, seed in enumerate((0, 1))]
    made[1].holds.start()
    try:
        with pytest.raises(HarnessError, match="instance 1 holds other data than instance 0"):
            made[0].holds.hold([3, 4])
    finally:
        made[1].holds.stop()


def test_an_instance_that_never_answers_fails_the_hold_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(instance_holds, "ACK_TIMEOUT_S", 0.3)
    lone = Instance(store_of(data(0)), tmp_path, 0, 2)  # instance 1 never started
    with pytest.raises(HarnessError, match=r"model instance\(s\) \[1\] did not hold the samples"):
        lone.holds.hold([1])


def test_an_instance_that_cannot_hold_the_set_says_why(tmp_path: Path) -> None:
    asking = Instance(store_of(data(0)), tmp_path, 0, 2)
    small = Instance(
        PreloadedSampleStore(lambda indices: data(0)[:2][list(indices)], 2, 2), tmp_path, 1, 2
    )
    small.holds.start()
    try:
        with pytest.raises(HarnessError, match="model instance 1 could not hold the samples: "):
            asking.holds.hold([0, 5])
    finally:
        small.holds.stop()
