"""The preflight check of LoadGen's detail logs in a staged scenario directory: the performance run,
each audit's run and the accuracy run.

These are the settings MLCommons' checker reads (seeds, the minimum duration setting, performance
sample count, Offline's samples per query, early stopping, Server's latency bound) plus two it does
not read and a submission still must satisfy: LoadGen's own verdict (`result_validity`) and no
LoadGen error in any log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlperf_harness.loadgen.results import (
    DETAIL_FILE,
    SUMMARY_FILE,
    read_detail_log,
    read_summary_reasons,
)
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.preflight_layout import ScenarioDir
from mlperf_harness.submission.preflight_problem import Kind, Problems
from mlperf_harness.submission.rules import AuditTest

_MLLOG_MARKER = ":::MLLOG"
# LoadGen stops SingleStream, MultiStream and Server (Interactive too: LoadGen's Server) on an
# early-stopping estimate; Offline has none.
EARLY_STOPPING_SCENARIOS = frozenset(
    {Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM, Scenario.SERVER, Scenario.INTERACTIVE}
)


def _entries(run_dir: Path, problems: Problems) -> dict[str, Any] | None:
    """The detail log's records, with each LoadGen error reported; None where it cannot be read."""
    path = run_dir / DETAIL_FILE
    if not path.is_file():
        return None  # the layout check reports the missing file
    with path.open(encoding="utf-8", errors="replace") as stream:
        first = stream.readline()
    if not first.startswith(_MLLOG_MARKER):
        # MLCommons' parser stops at such a log: nothing after it would be checked.
        problems.add(
            path, "not a LoadGen detail log (its first line is no :::MLLOG record)", Kind.LAYOUT
        )
        return None
    detail = read_detail_log(path)
    for error in detail.errors:
        problems.add(path, f"LoadGen logged an error: {error}", Kind.LOADGEN_ERROR)
    return detail.entries


def _check_identity(
    path: Path, entries: dict[str, Any], sdir: ScenarioDir, mode: str, problems: Problems
) -> None:
    scenario = entries.get("effective_scenario")
    # LoadGen logs an Interactive run as the Server run it is (under the "-interactive" model's
    # bounds, which its detail log shows as requested_server_ttft_latency / tpot_latency).
    if scenario != sdir.scenario.loadgen.value:
        problems.add(
            path, f"a {scenario} run in the {sdir.scenario.value} directory", Kind.SETTINGS
        )
    test_mode = entries.get("effective_test_mode")
    if test_mode != mode:
        problems.add(path, f"a {test_mode} run where a {mode} run belongs", Kind.SETTINGS)


def check_performance_run(sdir: ScenarioDir, audit: AuditTest | None, problems: Problems) -> None:
    """performance/run_1 (audit None) or TEST0x/performance/run_1."""
    base = sdir.audit_dir(audit) if audit is not None else sdir.path
    run_dir = base / "performance" / "run_1"
    entries = _entries(run_dir, problems)
    if entries is None:
        return
    path = run_dir / DETAIL_FILE
    _check_identity(path, entries, sdir, "PerformanceOnly", problems)
    _check_validity(run_dir, entries, audit, problems)
    _check_round_settings(path, entries, sdir, audit, problems)
    _check_audit_settings(path, entries, sdir, audit, problems)


def _check_validity(
    run_dir: Path, entries: dict[str, Any], audit: AuditTest | None, problems: Problems
) -> None:
    validity = entries.get("result_validity")
    if validity == "VALID":
        return
    path = run_dir / DETAIL_FILE
    if validity is None:
        problems.add(path, "no result_validity: the run did not finish", Kind.VALIDITY)
        return
    summary = run_dir / SUMMARY_FILE
    reasons = read_summary_reasons(summary) if summary.is_file() else []
    why = f": {'; '.join(reasons)}" if reasons else ""
    if audit is None:
        problems.add(path, f"LoadGen judged the performance run {validity}{why}", Kind.VALIDITY)
    else:
        # An audit run's verdict matters only through its verification, which the round lets a
        # short CPU run fail (the audit comparisons of short or INVALID runs).
        problems.add(
            path,
            f"LoadGen judged the {audit.value} audit run {validity}{why}",
            Kind.AUDIT_PERFORMANCE,
        )


def _check_round_settings(
    path: Path,
    entries: dict[str, Any],
    sdir: ScenarioDir,
    audit: AuditTest | None,
    problems: Problems,
) -> None:
    table = sdir.table
    seeds, whose = table.seeds, f"{table.name}'s"
    if audit is AuditTest.TEST05 and table.test05_seeds is not None:
        # The checker compares a log under TEST05/ with the round's TEST05 seeds.
        seeds, whose = table.test05_seeds, f"{table.name}'s TEST05"
    for name, seed in seeds.items():
        found = entries.get(f"effective_{name}")
        if found != seed:
            problems.add(path, f"{name} is {found}, {whose} is {seed}", Kind.SETTINGS)
    duration = entries.get("effective_min_duration_ms")
    least = table.min_duration_ms
    if not isinstance(duration, int) or duration < least:
        problems.add(
            path,
            f"min_duration_ms is {duration}, the round needs at least {least}",
            Kind.MIN_DURATION,
        )
    scenario = sdir.scenario
    if scenario in EARLY_STOPPING_SCENARIOS and entries.get("early_stopping_met") is not True:
        result = entries.get("early_stopping_result") or "no estimate"
        problems.add(path, f"early stopping not met: {result}", Kind.EARLY_STOPPING)
    rules = sdir.rules
    if rules is None:
        return
    least_per_query = rules.offline_min_samples_per_query
    if scenario is Scenario.OFFLINE and sdir.closed and least_per_query is not None:
        per_query = entries.get("effective_samples_per_query")
        if not isinstance(per_query, int) or per_query < least_per_query:
            problems.add(
                path,
                f"samples_per_query is {per_query}, the closed division needs at least "
                f"{least_per_query} for {rules.model}",
                Kind.OFFLINE_SAMPLES_PER_QUERY,
            )
    count = entries.get("effective_performance_sample_count")
    if not isinstance(count, int) or count < rules.performance_sample_count:
        # A data set smaller than the model's (a stand-in's 6 volumes for 3D-UNet's 43) is the
        # dataset-size kind; a count LoadGen did not log at all is a settings problem.
        problems.add(
            path,
            f"performance_sample_count is {count}, {rules.model} needs at least "
            f"{rules.performance_sample_count}",
            Kind.DATASET_SIZE if isinstance(count, int) else Kind.SETTINGS,
        )
    least_queries = (rules.min_queries or {}).get(scenario)
    if scenario not in EARLY_STOPPING_SCENARIOS and least_queries:
        queries = entries.get("effective_min_query_count")
        if not isinstance(queries, int) or queries < least_queries:
            problems.add(
                path,
                f"min_query_count is {queries}, the round needs at least {least_queries}",
                Kind.SETTINGS,
            )
    if scenario is Scenario.SERVER and rules.server_latency_ns is not None:
        latency = entries.get("effective_target_latency_ns")
        if not isinstance(latency, int) or latency > rules.server_latency_ns:
            problems.add(
                path,
                f"target_latency_ns is {latency}, {rules.model}'s Server bound is {rules.server_latency_ns}",
                Kind.LATENCY_BOUND,
            )


def _check_audit_settings(
    path: Path,
    entries: dict[str, Any],
    sdir: ScenarioDir,
    audit: AuditTest | None,
    problems: Problems,
) -> None:
    """An audit's run must be that audit (its audit.config applied); a normal run must be none."""
    same = entries.get("effective_performance_issue_same")
    if audit is None:
        if same or entries.get("effective_performance_issue_unique"):
            problems.add(
                path,
                "a TEST04-style run (performance_issue_*) staged as the performance run",
                Kind.SETTINGS,
            )
        return
    table = sdir.table
    if audit is AuditTest.TEST01:
        wanted: dict[str, Any] = {
            "effective_accuracy_log_rng_seed": table.test01_accuracy_log_rng_seed
        }
        if sdir.rules is not None and sdir.rules.accuracy_log_sampling_target is not None:
            wanted["effective_accuracy_log_sampling_target"] = (
                sdir.rules.accuracy_log_sampling_target
            )
    elif audit is AuditTest.TEST04:
        # LoadGen logs the two issue switches as booleans.
        wanted = {
            f"effective_{key}": bool(value) if key != "performance_issue_same_index" else value
            for key, value in table.test04_settings.items()
        }
    else:
        return  # TEST05: its seeds, checked with the round's settings
    for key, value in wanted.items():
        found = entries.get(key)
        if found != value:
            setting = key.removeprefix("effective_")
            problems.add(
                path,
                f"not a {audit.value} audit run: {setting} is {found}, {audit.value}'s audit.config sets {value}",
                Kind.AUDIT,
            )


def check_accuracy_run(sdir: ScenarioDir, problems: Problems) -> None:
    run_dir = sdir.path / "accuracy"
    entries = _entries(run_dir, problems)
    if entries is None:
        return
    path = run_dir / DETAIL_FILE
    _check_identity(path, entries, sdir, "AccuracyOnly", problems)
    rules = sdir.rules
    if rules is None or rules.dataset_size is None:  # None: the round's checker checks none
        return
    # LoadGen logs the samples an accuracy run covered as effective_accuracy_sample_count (older
    # versions only as the QSL's total count).
    covered = entries.get(
        "effective_accuracy_sample_count", entries.get("qsl_reported_total_count")
    )
    if covered != rules.dataset_size:
        problems.add(
            path,
            f"the accuracy run covered {covered} samples, {rules.model}'s dataset has {rules.dataset_size}",
            Kind.DATASET_SIZE,
        )
