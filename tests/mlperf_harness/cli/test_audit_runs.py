"""Audit runs through the real harness and LoadGen (null backend): the audit.config is the run's
own, handed to LoadGen by path, and a stray audit.config in the working directory changes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.loadgen.results import read_detail_log

# min_query_count 1: the duration and rate size the query, not harness_overhead's config's count
# (10 million samples, seconds of CPU a run)
SHORT = [
    "--scenario",
    "Offline",
    "--min_duration_ms",
    "200",
    "--offline_expected_qps",
    "20000",
    "--min_query_count",
    "1",
]


def _run(log_dir: Path, *extra: str) -> dict[str, object]:
    assert run_benchmark_cli(BENCHMARK, [*SHORT, "--log_dir", str(log_dir), *extra]) == 0
    result: dict[str, object] = json.loads((log_dir / "result.json").read_text())
    return result


def _effective(log_dir: Path) -> dict[str, object]:
    return read_detail_log(log_dir / "mlperf_log_detail.txt").entries


def test_stray_audit_config_in_the_working_directory_leaves_a_normal_run_normal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What LoadGen's binding would pick up by default: a TEST04 config in the working directory.
    (tmp_path / "audit.config").write_text("*.*.performance_issue_same = 1\n*.*.mode = 2\n")
    monkeypatch.chdir(tmp_path)
    result = _run(tmp_path / "normal")
    assert result["audit_test"] is None
    assert _effective(tmp_path / "normal")["effective_performance_issue_same"] is False
    assert not (tmp_path / "normal" / "audit.config").exists()


@pytest.mark.parametrize(
    ("test", "key", "value"),
    [
        ("TEST01", "effective_accuracy_log_sampling_target", 4096),
        ("TEST04", "effective_performance_issue_same", True),
    ],
)
def test_audit_run_writes_its_config_and_loadgen_applies_it(
    test: str, key: str, value: object, tmp_path: Path
) -> None:
    result = _run(tmp_path / test, "--audit_test", test)
    assert result["audit_test"] == test
    config = (tmp_path / test / "audit.config").read_text()
    assert "*.*.mode = 2" in config
    entries = _effective(tmp_path / test)
    assert entries[key] == value
    assert entries["effective_test_mode"] == "PerformanceOnly"


def test_audit_the_benchmark_does_not_need_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_benchmark_cli(
        BENCHMARK, [*SHORT, "--log_dir", str(tmp_path), "--audit_test", "TEST06"]
    )
    assert code == 2
    assert "no TEST06 audit" in capsys.readouterr().err


def test_audit_in_accuracy_mode_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*SHORT, "--log_dir", str(tmp_path), "--audit_test", "TEST01"]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--test_mode", "AccuracyOnly"]) == 2
    assert "leave --test_mode at PerformanceOnly" in capsys.readouterr().err


def test_run_records_its_user_conf_and_command(tmp_path: Path) -> None:
    result = _run(tmp_path / "run")
    assert result["command"] == [*SHORT, "--log_dir", str(tmp_path / "run")]
    user_conf = (tmp_path / "run" / "user.conf").read_text()
    assert "harness_overhead.Offline.min_duration = 200" in user_conf
    assert os.path.getsize(tmp_path / "run" / "user.conf") > 0
