"""The submission's summary: one row per benchmark and scenario, as markdown and CSV.

The metric is the one MLCommons' checker reports for the scenario, read from the performance run's
detail log: Offline samples/s, Server completed samples/s, SingleStream and MultiStream early-stopping
latencies."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.loadgen.results import DETAIL_FILE, read_detail_log
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import result_record
from mlperf_harness.submission.audit_dirs import VERIFY_ACCURACY, test06_passes
from mlperf_harness.submission.rounds import DEFAULT_ROUND
from mlperf_harness.submission.rules import METRIC_KEYS, AuditTest, model_rules
from mlperf_harness.submission.runs import ScenarioRuns

# Scenario -> (what its metric is, unit, scale from the logged value).
_METRICS = {
    Scenario.OFFLINE: ("samples/s", "", 1.0),
    Scenario.SERVER: ("completed samples/s", "", 1.0),
    Scenario.SINGLE_STREAM: ("early-stopping p90 latency", " ms", 1e-6),
    Scenario.MULTI_STREAM: ("early-stopping p99 latency", " ms", 1e-6),
    Scenario.INTERACTIVE: ("completed samples/s", "", 1.0),
}
# An LLM's token-based result (ModelRules.metric_keys), by its detail log key.
_TOKEN_METRICS = {
    "result_tokens_per_second": "tokens/s",
    "result_completed_tokens_per_second": "completed tokens/s",
}
COLUMNS = (
    "benchmark",
    "scenario",
    "metric",
    "value",
    "valid",
    "accuracy",
    "accuracy_target",
    "accuracy_passed",
    "TEST01",
    "TEST04",
    "stand_in",
)


@dataclass(frozen=True)
class SummaryRow:
    values: dict[str, str]


# Audits shown only where a round has them: TEST05 (v4.0), TEST06 (GPT-J).
_EXTRA_AUDITS = (AuditTest.TEST05, AuditTest.TEST06)


def _verdict(audit_dir: Path | None, test: AuditTest | None = None) -> str:
    if audit_dir is None:
        return "-"
    if test is AuditTest.TEST06:  # three check lines, no "TEST PASS"
        verify = audit_dir / VERIFY_ACCURACY
        if not verify.is_file():
            return "missing"
        return "PASS" if test06_passes(verify.read_text(errors="replace")) else "FAIL"
    texts = [
        (audit_dir / name).read_text(errors="replace")
        for name in ("verify_accuracy.txt", "verify_performance.txt")
        if (audit_dir / name).is_file()
    ]
    if not texts:
        return "missing"
    return "PASS" if all("TEST PASS" in text for text in texts) else "FAIL"


def summary_row(runs: ScenarioRuns, round_name: str = DEFAULT_ROUND) -> SummaryRow:
    name, unit, scale = _METRICS[runs.scenario]
    key = METRIC_KEYS[runs.scenario]
    rules = model_rules(runs.model, round_name)
    if runs.scenario in rules.metric_keys:
        key = rules.metric_keys[runs.scenario]
        name, unit, scale = _TOKEN_METRICS[key], "", 1.0
    entries: dict[str, Any] = {}
    if (runs.performance_dir / DETAIL_FILE).is_file():
        entries = read_detail_log(runs.performance_dir / DETAIL_FILE).entries
    value = entries.get(key)
    performance = result_record(runs.performance_dir)
    accuracy = result_record(runs.accuracy_dir).get("accuracy") or {}
    valid = performance.get("result_valid")
    return SummaryRow(
        {
            "benchmark": runs.model,
            "scenario": runs.scenario.value,
            "metric": name,
            "value": "n/a" if value is None else f"{float(value) * scale:,.3f}{unit}",
            "valid": _yes_no(valid, "VALID", "INVALID"),
            "accuracy": _accuracy_text(accuracy),
            "accuracy_target": f"{rules.metric_label} >= {rules.accuracy_target:.3f}",
            "accuracy_passed": _yes_no(accuracy.get("passed"), "yes", "no"),
            "TEST01": _verdict(runs.audit_dirs.get(AuditTest.TEST01)),
            "TEST04": _verdict(runs.audit_dirs.get(AuditTest.TEST04)),
            "stand_in": "yes" if performance.get("stand_in") else "no",
            **{
                test.value: _verdict(runs.audit_dirs[test], test)
                for test in _EXTRA_AUDITS
                if test in runs.audit_dirs
            },
        }
    )


def _columns(rows: Sequence[SummaryRow]) -> tuple[str, ...]:
    """The columns, with TEST05 and TEST06 where the rows have them."""
    extra = tuple(
        test.value for test in _EXTRA_AUDITS if any(test.value in row.values for row in rows)
    )
    return COLUMNS + extra


def _yes_no(value: object, yes: str, no: str) -> str:
    return yes if value is True else no if value is False else "n/a"


def _accuracy_text(accuracy: dict[str, Any]) -> str:
    return str(accuracy.get("line", "n/a"))  # the metric line in MLCommons' words


def as_markdown(rows: Sequence[SummaryRow], title: str) -> str:
    columns = _columns(rows)
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(row.values.get(c, "-") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def as_csv(rows: Sequence[SummaryRow]) -> str:
    out = io.StringIO()
    columns = _columns(rows)
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", restval="-")
    writer.writeheader()
    for row in rows:
        writer.writerow(row.values)
    return out.getvalue()


def write_summary(
    runs: Sequence[ScenarioRuns],
    out_dir: Path,
    title: str,
    notes: Sequence[str] = (),
    round_name: str = DEFAULT_ROUND,
) -> str:
    rows = [summary_row(r, round_name) for r in runs]
    markdown = as_markdown(rows, title)
    if notes:
        markdown += "\n" + "\n".join(f"- {note}" for note in notes) + "\n"
    write_text_atomic(out_dir / "summary.md", markdown)
    write_text_atomic(out_dir / "summary.csv", as_csv(rows))
    return markdown
