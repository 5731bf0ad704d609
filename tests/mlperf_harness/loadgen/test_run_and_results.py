"""A real LoadGen test with a do-nothing SUT, then our parse of the logs it wrote."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.handles import query_sample_library, system_under_test
from mlperf_harness.loadgen.results import parse_logs, read_summary_reasons
from mlperf_harness.loadgen.run import prepare_log_dir, run_test
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode


def _complete_at_once(query_samples: Sequence[Any]) -> None:
    lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in query_samples])


def _run(settings: LoadgenSettings, log_dir: Path) -> Any:
    with (
        system_under_test(_complete_at_once, lambda: None) as sut,
        query_sample_library(32, 32, lambda _: None, lambda _: None) as qsl,
    ):
        return run_test(sut, qsl, settings, log_dir)


def test_server_run_is_parsed_from_the_logs(tmp_path: Path) -> None:
    settings = LoadgenSettings(
        model="harness_overhead",
        scenario=Scenario.SERVER,
        min_duration_ms=300,
        min_query_count=1000,  # enough queries for LoadGen's early-stopping check
        server_target_qps=2000,
    )
    result = _run(settings, tmp_path)
    assert result.scenario == "Server" and result.mode == "PerformanceOnly"
    assert result.valid is True and result.invalid_reasons == []
    assert result.completed_samples_per_second is not None
    assert 1500 < result.completed_samples_per_second < 2500
    assert result.scheduled_samples_per_second is not None
    assert result.samples_per_second is None
    assert {"p50", "p90", "p99", "p99.9", "min", "max", "mean"} <= set(result.latency_ns)
    assert result.latency_ns["p50"] <= result.latency_ns["p99"] <= result.latency_ns["max"]
    assert result.query_count is not None and result.query_count >= 1000
    # The summary LoadGen wrote agrees with our numbers.
    summary = (tmp_path / "mlperf_log_summary.txt").read_text()
    assert f"{result.completed_samples_per_second:.2f}" in summary


def test_invalid_offline_run_reports_loadgen_reasons(tmp_path: Path) -> None:
    # A maximum duration below the minimum cuts the run short: LoadGen must call it INVALID.
    settings = LoadgenSettings(
        model="harness_overhead",
        scenario=Scenario.OFFLINE,
        min_duration_ms=2000,
        max_duration_ms=1,
        offline_expected_qps=10,
    )
    result = _run(settings, tmp_path)
    assert result.valid is False
    assert "Min duration not satisfied" in result.invalid_reasons
    assert result.samples_per_second is not None


def test_accuracy_run_has_no_verdict_and_writes_accuracy_log(tmp_path: Path) -> None:
    settings = LoadgenSettings(
        model="harness_overhead", scenario=Scenario.OFFLINE, mode=TestMode.ACCURACY_ONLY
    )
    result = _run(settings, tmp_path)
    assert result.valid is None
    assert result.mode == "AccuracyOnly"
    entries = json.loads((tmp_path / "mlperf_log_accuracy.json").read_text())
    assert sorted(e["qsl_idx"] for e in entries) == list(range(32))


def test_summary_reason_parsing(tmp_path: Path) -> None:
    summary = tmp_path / "mlperf_log_summary.txt"
    summary.write_text(
        "Result is : INVALID\n"
        "  Performance constraints satisfied : NO\n"
        "  Min duration satisfied : Yes\n"
        "  Early stopping satisfied: NO\n"
        "Recommendations:\n"
        " * Reduce target QPS to improve latency.\n"
        "\n"
    )
    assert read_summary_reasons(summary) == [
        "Performance constraints not satisfied",
        "Early stopping not satisfied",
        "Reduce target QPS to improve latency.",
    ]


def test_summary_reasons_of_an_llm_run_say_which_early_stopping_wants_more(
    tmp_path: Path,
) -> None:
    """LoadGen 6.0.17's summary of an Interactive run (Llama2-70B on one H200, 2026-11-30) whose
    bounds held and whose TPOT early stopping wanted more queries."""
    summary = tmp_path / "mlperf_log_summary.txt"
    summary.write_text(
        "Result is : INVALID\n"
        "  Performance constraints satisfied : Yes\n"
        "  Min duration satisfied : Yes\n"
        "  Min queries satisfied : Yes\n"
        "  Early stopping satisfied: NO\n"
        "Recommendations:\n"
        "TTFT Early Stopping Result:\n"
        "\n"
        "TPOT Early Stopping Result:\n"
        " * Run unsuccessful.\n"
        " * Processed 470 queries.\n"
        " * Would need to run at least 368 more queries,\n"
        " with the run being successful if every additional\n"
        " query were under latency.\n"
        "\n"
        "================================================\n"
    )
    assert read_summary_reasons(summary) == [
        "Early stopping not satisfied",
        "TPOT early stopping: Run unsuccessful.",
        "TPOT early stopping: Processed 470 queries.",
        "TPOT early stopping: Would need to run at least 368 more queries, with the run being "
        "successful if every additional query were under latency.",
    ]


def test_missing_logs_and_unwritable_dir_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"wrote no mlperf_log_detail\.txt"):
        parse_logs(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(HarnessError, match="cannot write logs to"):
        prepare_log_dir(blocker / "logs")
