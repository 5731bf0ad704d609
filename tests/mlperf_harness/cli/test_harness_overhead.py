"""The harness_overhead benchmark end to end: our CLI, the real LoadGen, result.json on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli

# Sized by count, as harness_overhead's configs are (a minimum duration of 1 ms): no run depends on
# how fast this machine answers.
SHORT = ["--min_query_count", "2000"]


@pytest.mark.parametrize("scenario", ["Offline", "SingleStream", "MultiStream"])
def test_each_scenario_writes_result_json(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scenario", scenario, "--log_dir", str(tmp_path), *SHORT]
    if scenario == "Offline":
        argv += ["--offline_expected_qps", "1000"]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["benchmark"] == "harness_overhead"
    assert result["scenario"] == scenario
    assert result["test_mode"] == "PerformanceOnly"
    assert result["backend"] == "null"
    if scenario != "MultiStream":  # MultiStream's metric is latency alone
        assert result["samples_per_second"] > 0
    assert set(result["latency_ns"]) >= {"p50", "p90", "p99"}
    assert isinstance(result["result_valid"], bool)
    assert (tmp_path / "mlperf_log_summary.txt").is_file()
    out = capsys.readouterr().out
    assert f"harness_overhead {scenario} PerformanceOnly" in out
    assert "result.json" in out


def test_server_reports_completed_and_scheduled_rates(tmp_path: Path) -> None:
    # A latency bound of 100 ms, not mlperf.conf's 10: beside other tests on 2 cores, a few queries
    # of a do-nothing SUT can still wait 10 ms for a CPU, and early stopping then calls it INVALID.
    user_conf = tmp_path / "user.conf"
    user_conf.write_text("harness_overhead.Server.target_latency = 100\n")
    logs = tmp_path / "logs"
    argv = ["--scenario", "Server", "--log_dir", str(logs), "--server_target_qps", "2000"]
    argv += ["--min_duration_ms", "300", "--min_query_count", "1000", "--user_conf", str(user_conf)]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    result = json.loads((logs / "result.json").read_text())
    assert result["result_valid"] is True
    assert 1500 < result["completed_samples_per_second"] < 2500
    assert result["scheduled_samples_per_second"] > 0
    assert "samples_per_second" not in result


def test_user_conf_sets_target_qps(tmp_path: Path) -> None:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text("harness_overhead.Server.target_qps = 1500\n")
    logs = tmp_path / "logs"
    argv = ["--scenario", "Server", "--log_dir", str(logs), "--user_conf", str(user_conf)]
    argv += ["--min_duration_ms", "300", "--min_query_count", "100"]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    summary = (logs / "mlperf_log_summary.txt").read_text()
    assert "target_qps : 1500" in summary


def test_default_log_dir_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--scenario", "SingleStream", "--system_name", "testbox", *SHORT]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    [result_path] = (tmp_path / "build" / "logs").glob("*/testbox/harness_overhead/*/*/result.json")
    assert result_path.parts[-3:] == ("SingleStream", "PerformanceOnly", "result.json")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--backend", "quantum"], "unknown backend 'quantum': choose one of null"),
        (["--test_mode", "Fastest"], "unknown test mode 'Fastest'"),
        (["--scenario", "Batch"], "unknown scenario 'Batch'"),
        (["--min_duration_ms", "-5"], "must be a positive integer"),
        (["--user_conf", "/nonexistent/user.conf"], "user.conf not found"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_benchmark_cli(BENCHMARK, [*argv, "--log_dir", str(tmp_path / "logs")])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_unwritable_log_dir_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = run_benchmark_cli(BENCHMARK, ["--log_dir", str(blocker / "logs"), *SHORT])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness_overhead: error: cannot write logs to") and "\n" not in err
