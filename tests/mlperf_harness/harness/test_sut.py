"""The SUT over the native core under the real LoadGen: every sample answered, failures surfaced."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.harness.batching import DynamicBatcher, FixedBatches
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.handles import query_sample_library, system_under_test
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.run import run_test
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario


class FailingRunner(Runner):
    name = "failing"

    def activate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        raise ValueError("the engine fell over")

    def deactivate(self) -> None:
        pass


def run(sut: HarnessSUT, scenario: Scenario, log_dir: Path) -> LoadgenResult:
    store = EmptySampleStore(64, 64)
    settings = LoadgenSettings(
        model="harness_overhead",
        scenario=scenario,
        min_duration_ms=200,
        min_query_count=100,
        offline_expected_qps=1000.0,
        server_target_qps=1000.0,
    )
    with (
        sut,
        system_under_test(sut.issue_queries, sut.flush_queries) as sut_handle,
        query_sample_library(64, 64, store.load, store.unload) as qsl_handle,
    ):
        return run_test(sut_handle, qsl_handle, settings, log_dir)


@pytest.mark.parametrize("workers", [1, 3])
def test_server_with_several_workers(workers: int, tmp_path: Path) -> None:
    batches = DynamicBatcher(4, 0.0005)
    sut = HarnessSUT([NullRunner()] * workers, EmptySampleStore(64, 64), batches)
    result = run(sut, Scenario.SERVER, tmp_path)
    assert result.query_count is not None and result.query_count >= 100
    assert result.completed_samples_per_second


def test_a_failing_runner_still_answers_loadgen_then_raises(tmp_path: Path) -> None:
    sut = HarnessSUT([FailingRunner()], EmptySampleStore(64, 64), FixedBatches(7))
    with pytest.raises(RuntimeError, match="a harness worker failed") as caught:
        run(sut, Scenario.OFFLINE, tmp_path)  # returns at all only if every sample was answered
    assert isinstance(caught.value.__cause__, ValueError)


class CountingRunner(Runner):
    """Answers each sample with a zero after 1 ms (a device busy, the GIL released), and counts
    the batches it ran."""

    name = "counting"

    def __init__(self) -> None:
        self.batches = 0

    def activate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        self.batches += 1
        time.sleep(0.001)
        return np.zeros((len(batch), 1), dtype=np.int32)

    def deactivate(self) -> None:
        pass


def test_distinct_runners_each_serve_their_own_worker(tmp_path: Path) -> None:
    # A GPU backend gives one runner per GPU and stream: each must get a share of the batches.
    runners = [CountingRunner(), CountingRunner(), CountingRunner()]
    sut = HarnessSUT(runners, EmptySampleStore(64, 64), FixedBatches(1))
    result = run(sut, Scenario.OFFLINE, tmp_path)
    assert result.valid is not None
    total = sum(runner.batches for runner in runners)
    assert total >= 100  # one batch per sample (batch size 1), at least min_query_count samples
    assert all(runner.batches > 0 for runner in runners), [r.batches for r in runners]


def test_a_harness_needs_a_runner() -> None:
    with pytest.raises(ValueError, match="at least one runner"):
        HarnessSUT([], EmptySampleStore(1, 1), FixedBatches(1))


class ThreadRecordingRunner(CountingRunner):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        self.threads.add(threading.current_thread().name)
        return super().infer(batch)


@pytest.mark.parametrize("scenario", [Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM])
def test_inline_runs_each_query_on_loadgens_thread(scenario: Scenario, tmp_path: Path) -> None:
    runner = ThreadRecordingRunner()
    sut = HarnessSUT([runner], EmptySampleStore(64, 64), FixedBatches(3), inline=True)
    result = run(sut, scenario, tmp_path)  # returns only if every sample was answered
    assert result.query_count is not None and result.query_count >= 100
    assert runner.batches >= result.query_count  # MultiStream's 8 samples: 3 batches of <= 3
    # LoadGen issues these scenarios' queries from the thread that started the test.
    assert runner.threads == {threading.current_thread().name}
