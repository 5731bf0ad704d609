"""Completions built in C++: the response objects (checked inside the call, the only time they are
valid), empty batches and bad shapes; then the bytes LoadGen really logs, through the real LoadGen."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness import native
from mlperf_harness.backends.base import Runner
from mlperf_harness.harness.batching import DynamicBatcher, FixedBatches
from mlperf_harness.harness.completion import completion_mode
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.handles import query_sample_library, system_under_test
from mlperf_harness.loadgen.run import run_test
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode


class Recorder:
    """A `complete` function that reads the responses while they are valid: during the call."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[int, int, int]]] = []

    def __call__(self, responses: list[Any]) -> None:
        self.calls.append([(r.id, r.data, r.size) for r in responses])


def test_loadgen_response_objects_are_written_in_place() -> None:
    assert completion_mode() == "pooled"  # the layout check passed on the pinned LoadGen


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("count", [1, 3, 1000])
def test_one_call_per_batch_with_a_response_per_row(in_place: bool, count: int) -> None:
    recorder = Recorder()
    completer = native.Completer(recorder, lg.QuerySampleResponse, in_place=in_place)
    outputs = np.arange(count * 3, dtype=np.int32).reshape(count, 3)
    ids = [10**15 + i for i in range(count)]
    completer.complete(ids, outputs)
    completer.complete_batch(native.Batch(ids, list(range(count))), outputs)  # same, from a batch
    base = outputs.ctypes.data
    expected = [(rid, base + 12 * i, 12) for i, rid in enumerate(ids)]
    assert recorder.calls == [expected, expected]


def test_pooled_objects_are_reused_across_calls_of_different_sizes() -> None:
    recorder = Recorder()
    completer = native.Completer(recorder, lg.QuerySampleResponse)
    for count in (5, 2, 7, 1):
        outputs = np.zeros((count, 1), dtype=np.uint8)
        completer.complete(list(range(count)), outputs)
        assert recorder.calls[-1] == [(i, outputs.ctypes.data + i, 1) for i in range(count)]


def test_empty_rows_and_empty_batches() -> None:
    recorder = Recorder()
    completer = native.Completer(recorder, lg.QuerySampleResponse)
    completer.complete([4, 5], np.empty((2, 0), dtype=np.float32))
    assert recorder.calls == [[(4, 0, 0), (5, 0, 0)]]
    completer.complete([], np.empty((0, 4), dtype=np.float32))  # nothing to complete: no call
    assert len(recorder.calls) == 1


def test_non_contiguous_outputs_are_made_contiguous_for_the_call() -> None:
    seen: list[bytes] = []

    def read_bytes(responses: list[Any]) -> None:
        for response in responses:
            seen.append(ctypes.string_at(response.data, response.size))

    completer = native.Completer(read_bytes, lg.QuerySampleResponse)
    outputs = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]  # a strided view
    completer.complete([1, 2, 3], outputs)
    assert seen == [row.tobytes() for row in np.ascontiguousarray(outputs)]


def test_outputs_must_have_one_row_per_sample() -> None:
    completer = native.Completer(Recorder(), lg.QuerySampleResponse)
    with pytest.raises(ValueError):
        completer.complete([1, 2, 3], np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(ValueError):
        completer.complete([], np.zeros((1, 4), dtype=np.float32))


class EchoRunner(Runner):
    """Answers each sample with its own bytes: what LoadGen logs must be each sample's data."""

    name = "echo"

    def activate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        return batch.copy()

    def deactivate(self) -> None:
        pass


@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER])
def test_loadgen_logs_each_samples_bytes(scenario: Scenario, tmp_path: Path) -> None:
    count = 50  # batches of 8: sizes that do not divide evenly
    data = np.arange(count * 6, dtype=np.int32).reshape(count, 2, 3) * 7919

    def read(indices: Sequence[int]) -> npt.NDArray[np.int32]:
        return data[list(indices)]

    store = PreloadedSampleStore(read, count, count)
    batches = FixedBatches(8) if scenario is Scenario.OFFLINE else DynamicBatcher(8, 0.001)
    settings = LoadgenSettings(
        model="harness_overhead",
        scenario=scenario,
        mode=TestMode.ACCURACY_ONLY,
        offline_expected_qps=1000.0,
        server_target_qps=2000.0,
    )
    sut = HarnessSUT([EchoRunner()], store, batches)
    with (
        sut,
        system_under_test(sut.issue_queries, sut.flush_queries) as sut_handle,
        query_sample_library(count, count, store.load, store.unload) as qsl_handle,
    ):
        run_test(sut_handle, qsl_handle, settings, tmp_path)
    logged = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert sorted(entry["qsl_idx"] for entry in logged) == list(range(count))
    for entry in logged:
        assert bytes.fromhex(entry["data"]) == data[entry["qsl_idx"]].tobytes()
