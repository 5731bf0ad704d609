"""native.InlineRoundTrips under the real native LoadGen: each query's batches answered in C++ on
LoadGen's issue thread, the responses in the accuracy log, failures answered empty and raised once
the test is over. A GPU graph cannot run here: `launch` is a Python callable that does what a
round trip graph does to the pinned buffers (StandInRoundTrips), which the C++ calls with the GIL."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness import native
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.harness.batching import FixedBatches
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.paths import NATIVE, PYTHON
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode

COUNT = 64
OFFSET = 1  # as ResNet-50's background class


class StandInRoundTrips:
    """The pinned buffers of a runner's round trips and, as `launch`, what its graph for engine
    `position` does to them: each output row's label is ten times its sample row, plus OFFSET."""

    def __init__(self, batch_sizes: Sequence[int], dtype: type = np.int64) -> None:
        self.batch_sizes = list(batch_sizes)
        largest = max(batch_sizes)
        self.rows = np.zeros(largest, dtype=np.int64)
        self.outputs: npt.NDArray[Any] = np.full((largest, 1), -1, dtype=dtype)
        self.launched: list[int] = []  # the batch size of each launch

    def launch(self, position: int) -> None:
        size = self.batch_sizes[position]
        self.launched.append(size)
        self.outputs[:size, 0] = self.rows[:size] * 10 + OFFSET


def slot_table(unloaded: Sequence[int] = ()) -> npt.NDArray[np.int64]:
    """Sample index i sits in row COUNT - 1 - i (rows differ from indices); `unloaded`: -1."""
    slots = np.arange(COUNT - 1, -1, -1, dtype=np.int64)
    slots[list(unloaded)] = -1
    return slots


def bound(
    stand_in: StandInRoundTrips, slots: npt.NDArray[np.int64] | None = None
) -> native.InlineRoundTrips:
    trips = native.InlineRoundTrips(OFFSET)
    trips.bind(
        batch_sizes=stand_in.batch_sizes,
        rows=stand_in.rows,
        outputs=stand_in.outputs,
        slot_of=slot_table() if slots is None else slots,
        launch=stand_in.launch,
    )
    return trips


def run(
    trips: native.InlineRoundTrips, scenario: Scenario, log_dir: Path, mode: TestMode
) -> LoadgenResult:
    store = EmptySampleStore(COUNT, COUNT)
    batch = 8 if scenario is Scenario.MULTI_STREAM else 1
    sut = HarnessSUT(
        [NullRunner()], store, FixedBatches(batch), inline=True, loadgen_path=NATIVE,
        round_trips=trips,
    )  # fmt: skip
    settings = LoadgenSettings(
        "harness_overhead", scenario, mode, min_duration_ms=100, min_query_count=200,
        # Below what these take: LoadGen pre-generates queries enough for the minimum duration.
        single_stream_expected_latency_ns=1_000,
    )  # fmt: skip
    with sut:
        return run_under_loadgen(sut, SampleLibrary(COUNT, COUNT, store.load, store.unload),
                                 settings, log_dir)  # fmt: skip


def logged_labels(log_dir: Path) -> dict[int, int | None]:
    """Each sample's logged label; None for a sample answered empty."""
    return {
        response.qsl_idx: int(np.frombuffer(response.data, dtype="<i4")[0])
        if response.data
        else None
        for response in read_accuracy_log(log_dir / "mlperf_log_accuracy.json")
    }


@pytest.mark.parametrize(
    ("scenario", "engines", "launches"),
    [
        (Scenario.SINGLE_STREAM, [1], {1}),
        (Scenario.MULTI_STREAM, [1, 8], {8}),
        # A query larger than the largest engine: two round trips of 4.
        (Scenario.MULTI_STREAM, [2, 4], {4}),
    ],
    ids=["SingleStream", "MultiStream", "MultiStream-in-chunks"],
)
def test_every_sample_is_answered_with_its_rows_label(
    scenario: Scenario, engines: list[int], launches: set[int], tmp_path: Path
) -> None:
    stand_in = StandInRoundTrips(engines)
    trips = bound(stand_in)
    result = run(trips, scenario, tmp_path, TestMode.ACCURACY_ONLY)
    assert result.mode == "AccuracyOnly"
    expected = {index: (COUNT - 1 - index) * 10 for index in range(COUNT)}
    assert logged_labels(tmp_path) == expected
    assert set(stand_in.launched) == launches and trips.failure == ""


def test_int32_labels_and_a_performance_run(tmp_path: Path) -> None:
    stand_in = StandInRoundTrips([1], dtype=np.int32)
    result = run(bound(stand_in), Scenario.SINGLE_STREAM, tmp_path, TestMode.PERFORMANCE_ONLY)
    assert result.valid is True, result.invalid_reasons
    assert result.query_count is not None
    assert len(stand_in.launched) == result.query_count


def failure_of(trips: native.InlineRoundTrips, log_dir: Path) -> BaseException:
    with pytest.raises(RuntimeError, match="a harness worker failed") as caught:
        run(trips, Scenario.SINGLE_STREAM, log_dir, TestMode.ACCURACY_ONLY)
    assert caught.value.__cause__ is not None
    return caught.value.__cause__


def test_failures_are_answered_empty_and_raised_after_the_test(tmp_path: Path) -> None:
    unloaded = bound(StandInRoundTrips([1]), slot_table(unloaded=[5]))
    error = failure_of(unloaded, tmp_path / "unloaded")
    assert "LoadGen asked for sample 5, which was never loaded" in str(error)
    # The test ran to its end: that sample answered empty, every other one with its label.
    labels = logged_labels(tmp_path / "unloaded")
    assert len(labels) == COUNT and labels[5] is None and labels[6] == (COUNT - 7) * 10

    never_bound = native.InlineRoundTrips(OFFSET)
    assert not never_bound.bound
    assert "no round trips are bound" in str(failure_of(never_bound, tmp_path / "unbound"))

    def broken_launch(position: int) -> None:
        raise ValueError(f"graph {position} fell over")

    broken = native.InlineRoundTrips(OFFSET)
    stand_in = StandInRoundTrips([1])
    broken.bind(batch_sizes=[1], rows=stand_in.rows, outputs=stand_in.outputs,
                slot_of=slot_table(), launch=broken_launch)  # fmt: skip
    assert "ValueError: graph 0 fell over" in str(failure_of(broken, tmp_path / "broken"))
    broken.unbind()
    assert not broken.bound


def test_bind_refuses_what_a_round_trip_cannot_use() -> None:
    stand_in = StandInRoundTrips([1, 8])
    good: dict[str, Any] = {
        "batch_sizes": [1, 8],
        "rows": stand_in.rows,
        "outputs": stand_in.outputs,
        "slot_of": slot_table(),
        "launch": stand_in.launch,
    }
    trips = native.InlineRoundTrips(OFFSET)
    changes: list[tuple[dict[str, Any], str]] = [
        ({"rows": np.zeros(4, dtype=np.int64)}, "rows must be .* at least 8 rows"),
        ({"rows": np.zeros(8, dtype=np.int32)}, "rows must be a writable C-contiguous int64"),
        ({"outputs": np.zeros((8, 1), dtype=np.float32)}, "outputs must be .* int64 or int32"),
        ({"slot_of": np.zeros((2, COUNT), dtype=np.int64)}, "slot_of must be .* one-dimensional"),
        ({"batch_sizes": [8, 1]}, "batch sizes must be positive and ascending"),
        ({"batch_sizes": [], "outputs": np.zeros((0, 1), np.int64)}, "at least one engine"),
        ({"launch": 3}, "launch must be CudaGraphs or a callable"),
        ({"outputs": np.zeros((8, 0), dtype=np.int64)}, "holds no label"),
    ]
    for change, message in changes:
        with pytest.raises((ValueError, TypeError), match=message):
            trips.bind(**{**good, **change})
        assert not trips.bound
    trips.bind(**good)
    assert trips.bound


@pytest.mark.skipif(native.cuda_driver_error() == "", reason="this host has a CUDA driver")
def test_cuda_graphs_need_the_cuda_driver() -> None:
    with pytest.raises(
        RuntimeError, match="round trips launched from C\\+\\+ need the CUDA driver"
    ):
        native.CudaGraphs([1], 0, 0)


def test_round_trips_answer_only_the_native_loadgens_inline_queries() -> None:
    trips = native.InlineRoundTrips(OFFSET)
    store = EmptySampleStore(1, 1)
    for inline, path in [(False, NATIVE), (True, PYTHON)]:
        with pytest.raises(ValueError, match="inline queries of the native LoadGen only"):
            HarnessSUT([NullRunner()], store, FixedBatches(1), inline=inline, loadgen_path=path,
                       round_trips=trips)  # fmt: skip
