"""The harness under both LoadGen paths (loadgen/paths.py), each under the real LoadGen: the native
path (LoadGen's C++ compiled into our module) gives VALID runs whose logs our reader parses, the
same accuracy log as mlperf_loadgen's path, and the Python path's errors."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness import native
from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.harness.batching import BatchSource, DynamicBatcher, FixedBatches
from mlperf_harness.harness.completion import complete_native
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.harness.sample_store import EmptySampleStore, SampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.paths import LOADGEN_PATHS, NATIVE, PYTHON
from mlperf_harness.loadgen.results import LoadgenResult, parse_logs
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode

COUNT = 64
WIDTH = 12  # bytes per response row


def settings(scenario: Scenario, mode: TestMode = TestMode.PERFORMANCE_ONLY) -> LoadgenSettings:
    return LoadgenSettings(
        model="harness_overhead",
        scenario=scenario,
        mode=mode,
        min_duration_ms=300,
        min_query_count=1000,  # enough Server queries for LoadGen's early stopping
        offline_expected_qps=5000.0,
        server_target_qps=4000.0,
        # A bound the 2-core CI machine keeps under load (the fresh-clone run once saw p99 over
        # the model's own): these tests check the path, not the latency.
        server_target_latency_ns=200_000_000,
    )


class PacedRunner(NullRunner):
    """The null runner at most 5,000 samples/s (1 ms a batch of 5): an Offline query sized for
    that rate then outlasts LoadGen's minimum duration, and the run can be VALID."""

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        time.sleep(0.001)
        return super().infer(batch)


def run(
    path: str,
    scenario: Scenario,
    log_dir: Path,
    runners: Sequence[Runner] | None = None,
    mode: TestMode = TestMode.PERFORMANCE_ONLY,
    store: SampleStore | None = None,
    response_bytes: npt.NDArray[np.int64] | None = None,
) -> LoadgenResult:
    store = store or EmptySampleStore(COUNT, COUNT)
    if runners is None:  # Offline paced to its expected rate; Server's target is far below null's
        runners = [PacedRunner() if scenario is Scenario.OFFLINE else NullRunner()]
    inline = scenario in (Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM)
    batches: BatchSource = (
        DynamicBatcher(4, 0.0005) if scenario is Scenario.SERVER else FixedBatches(5)
    )
    sut = HarnessSUT(
        runners, store, batches, inline=inline, response_bytes=response_bytes, loadgen_path=path
    )
    qsl = SampleLibrary(COUNT, COUNT, store.load, store.unload)
    with sut:
        return run_under_loadgen(sut, qsl, settings(scenario, mode), log_dir)


def detail_value(log_dir: Path, key: str) -> object:
    for line in (log_dir / "mlperf_log_detail.txt").read_text().splitlines():
        record = json.loads(line.removeprefix(":::MLLOG "))
        if record["key"] == key:
            return record["value"]
    raise AssertionError(f"{key} not logged")


@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER])
def test_the_native_path_runs_valid_under_its_own_loadgen(
    scenario: Scenario, tmp_path: Path
) -> None:
    result = run(NATIVE, scenario, tmp_path)
    assert result.valid is True, result.invalid_reasons
    assert result.scenario == scenario.value and result.mode == "PerformanceOnly"
    assert result.errors == []
    assert {"mlperf_log_summary.txt", "mlperf_log_detail.txt"} <= {
        p.name for p in tmp_path.iterdir()
    }
    assert parse_logs(tmp_path) == result
    # The native LoadGen logged this run, at the version we pin, and the harness's SUT ran it.
    assert detail_value(tmp_path, "sut_name") == "HarnessNativeSUT"
    version = str(detail_value(tmp_path, "loadgen_version"))
    assert version.startswith(f"{metadata.version('mlcommons-loadgen')} @ "), version
    rate = result.samples_per_second or result.completed_samples_per_second
    assert rate is not None and rate > 0


@pytest.mark.parametrize("scenario", [Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM])
def test_the_native_path_runs_inline_scenarios(scenario: Scenario, tmp_path: Path) -> None:
    result = run(NATIVE, scenario, tmp_path)  # returns only if every query was answered
    assert result.query_count is not None and result.query_count >= 1000
    assert detail_value(tmp_path, "sut_name") == "HarnessNativeSUT"


class IndexRows(Runner):
    """Answers sample i with WIDTH bytes that say i: the accuracy log shows whose row went where."""

    name = "index-rows"

    def activate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        raise AssertionError("infer_samples answers")

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        rows = np.arange(WIDTH, dtype=np.uint8)[None, :] + np.asarray(indices, np.uint8)[:, None]
        return np.ascontiguousarray(rows)

    def deactivate(self) -> None:
        pass


def accuracy_log(log_dir: Path) -> list[tuple[int, bytes]]:
    responses = read_accuracy_log(log_dir / "mlperf_log_accuracy.json")
    return sorted((response.qsl_idx, response.data) for response in responses)


@pytest.mark.parametrize("cut", [False, True], ids=["whole rows", "rows cut to sizes"])
def test_the_accuracy_log_is_the_python_paths(cut: bool, tmp_path: Path) -> None:
    # Rows cut to each sample's own length, as BERT's responses are (response_bytes).
    sizes = np.arange(COUNT, dtype=np.int64) % (WIDTH + 1) if cut else None
    logs = {}
    for path in LOADGEN_PATHS:
        log_dir = tmp_path / path
        result = run(path, Scenario.OFFLINE, log_dir, [IndexRows()] * 2, TestMode.ACCURACY_ONLY,
                     response_bytes=sizes)  # fmt: skip
        assert result.valid is None and result.mode == "AccuracyOnly"
        logs[path] = accuracy_log(log_dir)
    assert [index for index, _ in logs[NATIVE]] == list(range(COUNT))
    assert logs[NATIVE] == logs[PYTHON]
    _, data = logs[NATIVE][7]
    expected = bytes(range(7, 7 + WIDTH))[: 7 % (WIDTH + 1) if cut else WIDTH]
    assert data == expected


class FailingRunner(NullRunner):
    name = "failing"

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        raise ValueError("the engine fell over")


@pytest.mark.parametrize("path", LOADGEN_PATHS)
def test_a_failing_runner_is_answered_then_raised_on_either_path(path: str, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="a harness worker failed") as caught:
        run(path, Scenario.OFFLINE, tmp_path, [FailingRunner()])
    assert isinstance(caught.value.__cause__, ValueError)


class FailingLoadStore(EmptySampleStore):
    def load(self, indices: Sequence[int]) -> None:
        raise ValueError(f"cannot load {len(indices)} samples")


def test_a_failing_load_raises_and_the_next_native_test_runs(tmp_path: Path) -> None:
    # The Python path raises the same error but leaves mlperf_loadgen's logger running: its next
    # test in the process ends in std::terminate. The native path stops its LoadGen first.
    with pytest.raises(ValueError, match=f"cannot load {COUNT} samples"):
        run(NATIVE, Scenario.OFFLINE, tmp_path / "failed", store=FailingLoadStore(COUNT, COUNT))
    assert not native.loadgen_test_running()
    assert run(NATIVE, Scenario.OFFLINE, tmp_path / "next").valid is True


def test_the_native_loadgen_takes_no_stray_completion(tmp_path: Path) -> None:
    batch = native.Batch([1, 2], [0, 1])
    with pytest.raises(RuntimeError, match="no native LoadGen test is running"):
        complete_native(batch, np.zeros((2, 1), np.uint8))
    sut = HarnessSUT([NullRunner()], EmptySampleStore(1, 1), FixedBatches(1), loadgen_path=NATIVE)
    with pytest.raises(RuntimeError, match="completes into the native LoadGen"):
        sut.issue_queries([])
    with pytest.raises(ValueError, match="loadgen_path must be one of"):
        HarnessSUT([NullRunner()], EmptySampleStore(1, 1), FixedBatches(1), loadgen_path="c++")
