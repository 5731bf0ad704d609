"""`--loadgen_path` from the command line: the shared ResNet-50 stand-in's AccuracyOnly run logs the
same responses under either LoadGen path, a native run's result.json is the usual one, and what the
native path cannot do is one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from one_line_errors import one_error_line
from shared_stand_in import SharedStandIn, shared_stand_in

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK as OVERHEAD
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK as RESNET50
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.loadgen.paths import LOADGEN_PATHS, NATIVE, PYTHON


@pytest.fixture(scope="module")
def stand_in() -> SharedStandIn:
    return shared_stand_in()


def result(logs: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((logs / "result.json").read_text())
    return record


def accuracy_entries(logs: Path) -> list[tuple[int, str]]:
    entries = json.loads((logs / "mlperf_log_accuracy.json").read_text())
    return sorted((entry["qsl_idx"], entry["data"]) for entry in entries)


def test_the_stand_ins_accuracy_log_is_the_same_on_either_path(
    stand_in: SharedStandIn, tmp_path: Path
) -> None:
    flags = [*stand_in.run_flags(), "--scratch_path", str(tmp_path / "scratch")]
    accuracy = ["--test_mode", "AccuracyOnly", "--count", "16", "--batch_size", "2"]
    for path in LOADGEN_PATHS:
        logs = tmp_path / path
        argv = [*flags, *accuracy, "--loadgen_path", path, "--log_dir", str(logs)]
        assert run_benchmark_cli(RESNET50, argv) == 0
    native, python = accuracy_entries(tmp_path / NATIVE), accuracy_entries(tmp_path / PYTHON)
    assert [index for index, _ in native] == list(range(16))
    assert native == python
    assert result(tmp_path / NATIVE)["accuracy"] == result(tmp_path / PYTHON)["accuracy"]
    assert result(tmp_path / NATIVE)["settings"]["loadgen_path"]["value"] == NATIVE


def test_a_native_server_run_from_the_command_line(tmp_path: Path) -> None:
    # At the config's target, far below what a machine holds; whether its p99 meets the bound
    # depends on the CPU's speed and load, no concern of this test's: the native path's run and
    # its record are.
    argv = [
        "--scenario", "Server", "--loadgen_path", "native",
        "--min_duration_ms", "300", "--min_query_count", "1000",
        "--scratch_path", str(tmp_path / "scratch"), "--log_dir", str(tmp_path / "logs"),
    ]  # fmt: skip
    assert run_benchmark_cli(OVERHEAD, argv) == 0
    record = result(tmp_path / "logs")
    assert isinstance(record["result_valid"], bool)
    assert record["settings"]["loadgen_path"]["value"] == NATIVE
    assert record["loadgen"]["errors"] == []
    assert (tmp_path / "logs" / "harness_timeline.json").is_file()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--loadgen_path", "c++"], "loadgen_path must be one of python, native, got 'c++'"),
        (
            ["--loadgen_path", "native", "--harness", "triton"],
            "--loadgen_path native runs the direct harness only, not --harness triton",
        ),
    ],
)
def test_what_the_native_path_cannot_do_is_one_line(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_benchmark_cli(OVERHEAD, [*flags, "--log_dir", str(tmp_path / "logs")]) == 2
    assert one_error_line(capsys.readouterr().err, OVERHEAD.name).endswith(message)
    assert not (tmp_path / "logs").exists()
