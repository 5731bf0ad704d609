"""Which batch source a run's scenario and settings get: Offline's in length order where the store
has sample lengths and order_by_length is on; every other scenario, and Offline without it, in
issue order; Server's in one queue, or one per length range with server_length_buckets."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.cli.run_harness import make_batch_source
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import DynamicBatcher, FixedBatches
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.loadgen.settings import Scenario


class LengthStore(EmptySampleStore):
    def sample_lengths(self) -> npt.NDArray[np.int64]:
        return np.array([30, 10, 20], np.int64)


def test_offline_batches_follow_the_store_lengths() -> None:
    source = make_batch_source(
        Scenario.OFFLINE, HarnessSettings(batch_size=2, order_by_length=True), LengthStore(3, 3)
    )
    assert isinstance(source, FixedBatches) and source.ordered
    source.put([7, 8, 9], [0, 1, 2])
    source.close()
    assert [b.sample_indices for b in iter(source.next_batch, None)] == [[1, 2], [0]]


@pytest.mark.parametrize(
    ("scenario", "order"),
    [
        (Scenario.OFFLINE, False),
        (Scenario.OFFLINE, None),
        (Scenario.SINGLE_STREAM, True),
        (Scenario.MULTI_STREAM, True),
    ],
)
def test_other_runs_keep_issue_order(scenario: Scenario, order: bool | None) -> None:
    settings = HarnessSettings(batch_size=2, order_by_length=order)
    source = make_batch_source(scenario, settings, LengthStore(3, 3))
    assert isinstance(source, FixedBatches) and not source.ordered


def test_server_batches_dynamically() -> None:
    settings = HarnessSettings(batch_size=2, order_by_length=True)
    assert isinstance(
        make_batch_source(Scenario.SERVER, settings, LengthStore(3, 3)), DynamicBatcher
    )


def test_lengths_asked_for_where_the_samples_have_none_is_one_line() -> None:
    settings = HarnessSettings(batch_size=2, order_by_length=True)
    with pytest.raises(HarnessError, match="samples have no lengths"):
        make_batch_source(Scenario.OFFLINE, settings, EmptySampleStore(3, 3))


def test_server_length_buckets_give_a_queue_per_length_range() -> None:
    settings = HarnessSettings(batch_size=2, server_length_buckets=2, server_batch_timeout_us=0)
    source = make_batch_source(Scenario.SERVER, settings, LengthStore(3, 3))
    assert isinstance(source, DynamicBatcher) and source.buckets == 2
    source.put([7, 8, 9], [0, 1, 2])  # lengths 30, 10, 20: the shorter two, then the longest
    source.close()
    batches = sorted(b.sample_indices for b in iter(source.next_batch, None))
    assert batches == [[0], [1, 2]]
    one = make_batch_source(Scenario.SERVER, HarnessSettings(batch_size=2), LengthStore(3, 3))
    assert isinstance(one, DynamicBatcher) and one.buckets == 1


def test_server_length_buckets_where_the_samples_have_no_lengths_is_one_line() -> None:
    settings = HarnessSettings(batch_size=2, server_length_buckets=3)
    with pytest.raises(HarnessError, match=r"--server_length_buckets: .* no lengths"):
        make_batch_source(Scenario.SERVER, settings, EmptySampleStore(3, 3))
