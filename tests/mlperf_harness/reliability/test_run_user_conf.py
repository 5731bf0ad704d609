"""user.conf is read and checked before any preparation: a bad line is one error naming its number,
whatever LoadGen would reject or silently ignore is refused, and errors LoadGen logs during a run
fail it loudly. A resnet50 run would build the stand-in (minutes) if the check came after
preparation, so an empty scratch that stays empty proves the order: once in a process of its own,
then for each kind of line through the same entry point in this process (faster)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_support import Harness

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK as OVERHEAD_BENCHMARK
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli

BEFORE_PREPARATION_S = 60  # far less than a stand-in build, far more than a check


BAD_LINES = [
    ("resnet50.Offline.target_qps 5", "line 2: expected 'model.scenario.key = value'"),
    ("resnet50.Offline.target_qps=5", "line 2: put spaces around '='"),
    ("resnet50.Offline.target_qps = fast", "line 2: the value 'fast' is not a number"),
    ("resnet50.Offline.target_qsp = 5", "line 2: unknown key 'target_qsp' (did you mean"),
    ("resnet50.offline.target_qps = 5", "line 2: unknown scenario 'offline' (did you mean Offline"),
    ("resnet-50.Offline.target_qps = 5", "line 2: unknown model 'resnet-50' (did you mean"),
    ("resnet50.Offline.target_qps = -5", "line 2: target_qps must be a number above 0, got -5"),
    ("resnet50.Offline.samples_per_query = 8", "line 2: LoadGen reads samples_per_query for"),
    ("*.*.qsl_rng_seed = 1", "line 2: qsl_rng_seed comes from mlperf.conf only"),
    ("resnet50.Offline.target_qps = 5 # tuned", "line 2: a comment after a value is an error"),
]


def _user_conf(tmp_path: Path, line: str) -> Path:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text(f"# tuned for this machine\n{line}\n")
    return user_conf


def test_a_bad_user_conf_line_is_named_before_any_preparation(
    harness: Harness, tmp_path: Path
) -> None:
    text, expected = BAD_LINES[0]
    user_conf = _user_conf(tmp_path, text)
    scratch = tmp_path / "scratch"
    argv: list[str | Path] = [
        "--user_conf",
        user_conf,
        "--scratch_path",
        scratch,
        "--log_dir",
        tmp_path / "logs",
    ]
    done = harness.run(harness.command(*argv), timeout=BEFORE_PREPARATION_S)
    assert f"{user_conf} {expected}" in done.error_line("resnet50")
    assert not scratch.exists() and not (tmp_path / "logs").exists()


@pytest.mark.parametrize(("text", "expected"), BAD_LINES)
def test_every_kind_of_bad_line_is_named(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same check in this process, for each kind of line LoadGen rejects or would ignore."""
    user_conf = _user_conf(tmp_path, text)
    scratch = tmp_path / "scratch"
    argv = ["--user_conf", str(user_conf), "--scratch_path", str(scratch)]
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"resnet50: error: {user_conf} {expected}" in err, err
    assert not scratch.exists()


def test_a_missing_user_conf_is_reported_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    argv = ["--user_conf", str(tmp_path / "user.conf"), "--scratch_path", str(scratch)]
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"resnet50: error: user.conf not found: {tmp_path / 'user.conf'}"
    assert not scratch.exists()


def test_a_good_user_conf_is_applied(tmp_path: Path) -> None:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text(
        "# shared by several benchmarks\n"
        "bert-99.9.Offline.target_qps = 3000\n"
        "*.Server.target_qps = 1500\n"
        "harness_overhead.Server.target_latency = 15\n"
        "#harness_overhead.Server.target_qps = 99\n"
    )
    logs = tmp_path / "logs"
    argv = ["--scenario", "Server", "--user_conf", str(user_conf), "--log_dir", str(logs)]
    argv += ["--min_duration_ms", "300", "--min_query_count", "100"]
    assert run_benchmark_cli(OVERHEAD_BENCHMARK, argv) == 0
    summary = (logs / "mlperf_log_summary.txt").read_text()
    assert "target_qps : 1500" in summary and "target_latency (ns): 15000000" in summary


def test_an_error_logged_by_loadgen_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An expected latency far above the real one: LoadGen generates too few queries, runs out
    # before the minimum duration and logs an error, which the submission checker refuses.
    user_conf = tmp_path / "user.conf"
    user_conf.write_text("harness_overhead.SingleStream.target_latency = 100\n")
    logs = tmp_path / "logs"
    argv = ["--scenario", "SingleStream", "--user_conf", str(user_conf), "--log_dir", str(logs)]
    argv += ["--min_duration_ms", "500", "--min_query_count", "1"]
    assert run_benchmark_cli(OVERHEAD_BENCHMARK, argv) == 1
    out = capsys.readouterr().out
    assert "result:        INVALID" in out
    assert "LoadGen error: Ending early: Ran out of generated queries" in out
    result = json.loads((logs / "result.json").read_text())
    assert result["result_valid"] is False
    assert any(r.startswith("LoadGen error: Ending early") for r in result["invalid_reasons"])
