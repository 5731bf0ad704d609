"""How run_harness drives a backend that gives one runner per GPU and stream (the torch backend's
shape), with a clearly named stand-in for those GPU runners, since no GPU exists here: the real
LoadGen, the harness_overhead benchmark, our CLI."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.backends import registry
from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.harness.sample_store import SampleStore


class FakeGpuRunner(Runner):
    """Stands in for one GPU stream's runner: records its life cycle, the loads it was told of and
    the batches it ran (each after 1 ms, the GIL released, as a device would)."""

    name = "fake_gpu"

    def __init__(self) -> None:
        self.events: list[str] = []
        self.batches = 0
        self.threads: set[str] = set()

    def activate(self) -> None:
        self.events.append("activate")

    def samples_loaded(self, store: SampleStore) -> None:
        self.events.append("samples_loaded")

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        self.batches += 1
        self.threads.add(threading.current_thread().name)
        threading.Event().wait(0.001)
        return np.zeros((len(batch), 1), dtype=np.int32)

    def deactivate(self) -> None:
        self.events.append("deactivate")


@pytest.fixture
def fake_gpu_runners(monkeypatch: pytest.MonkeyPatch) -> list[FakeGpuRunner]:
    runners = [FakeGpuRunner() for _ in range(3)]
    monkeypatch.setitem(registry._FACTORIES, "fake_gpu", lambda options: list(runners))
    return runners


def test_each_runner_is_activated_told_of_loads_and_given_batches(
    fake_gpu_runners: list[FakeGpuRunner], tmp_path: Path
) -> None:
    argv = [
        "--backend", "fake_gpu", "--scenario", "Offline", "--batch_size", "1",
        "--log_dir", str(tmp_path), "--min_duration_ms", "300", "--min_query_count", "64",
        "--offline_expected_qps", "1000",
    ]  # fmt: skip
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    assert json.loads((tmp_path / "result.json").read_text())["backend"] == "fake_gpu"
    for runner in fake_gpu_runners:
        # Activated once and warmed up, told of LoadGen's load (before timing) and unload.
        assert runner.events == ["activate", "samples_loaded", "samples_loaded", "deactivate"]
        assert runner.batches > 1  # the warm-up batch and a share of the run's
        assert any(name.startswith("harness-worker") for name in runner.threads)


def test_single_stream_uses_the_first_runner_on_loadgens_thread(
    fake_gpu_runners: list[FakeGpuRunner], tmp_path: Path
) -> None:
    argv = [
        "--backend", "fake_gpu", "--scenario", "SingleStream", "--log_dir", str(tmp_path),
        "--min_duration_ms", "300", "--min_query_count", "64",
    ]  # fmt: skip
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    first, *others = fake_gpu_runners
    assert first.batches >= 64 and threading.current_thread().name in first.threads
    assert all(runner.batches == 1 for runner in others)  # their warm-up only
