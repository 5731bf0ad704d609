"""Parse LoadGen's logs into one result record.

Numbers come from `mlperf_log_detail.txt` (`:::MLLOG {json}` lines, exact values); the verdict's
reasons come from `mlperf_log_summary.txt`, which words them for people ("Min duration satisfied : NO"
and the "Recommendations" that follow).

A log that LoadGen did not finish (the process died, the disk filled) is an error, never a result:
each mode's complete log has keys that only the end of a test writes, and LoadGen's summary ends with
its count of errors. A log that holds LoadGen errors is a result, but never a VALID one.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError

SUMMARY_FILE = "mlperf_log_summary.txt"
DETAIL_FILE = "mlperf_log_detail.txt"
ACCURACY_FILE = "mlperf_log_accuracy.json"

_MLLOG_PREFIX = ":::MLLOG "
_PERCENTILE_KEY = re.compile(r"^result_(\d+\.\d+)_percentile_latency_ns$")
# MultiStream's metric is the latency of whole queries (8 samples), logged under separate keys.
_FIRST_TOKEN_KEY = re.compile(r"^result_first_token_(\d+\.\d+)_percentile_latency_ns$")
_TPOT_KEY = re.compile(r"^result_time_per_output_token_(\d+\.\d+)_percentile_ns$")
# LoadGen's token rate, the first key present: measured (use_token_latencies) or inferred from
# a samples' rate (infer_token_latencies), Offline's or Server's.
_TOKEN_RATE_KEYS = (
    "result_tokens_per_second",
    "result_completed_tokens_per_second",
    "result_inferred_tokens_per_second",
    "result_inferred_completed_tokens_per_second",
)
_PER_QUERY_PERCENTILE_KEY = re.compile(r"^result_(\d+\.\d+)_percentile_per_query_latency_ns$")
_UNSATISFIED = re.compile(r"^\s*(?P<check>[A-Za-z ]+?)\s*(satisfied)?\s*:\s*NO\s*$")
# Where LoadGen's summary gives its advice: "Recommendations:", "Early Stopping Result:", and for
# the LLMs (token latencies) "TTFT Early Stopping Result:" and "TPOT Early Stopping Result:".
_ADVICE = re.compile(r"^(?:Recommendations|(?P<metric>[A-Z]+ )?Early Stopping Result):\s*$")
# A check the summary says is not met, as its reasons word it: "Min duration not satisfied".
UNMET = " not satisfied"
MIN_DURATION_UNMET = "Min duration" + UNMET
EARLY_STOPPING_UNMET = "Early stopping" + UNMET


@dataclass(frozen=True)
class LoadgenResult:
    scenario: str
    mode: str
    valid: bool | None  # None where LoadGen judges nothing (AccuracyOnly)
    invalid_reasons: list[str] = field(default_factory=list)
    samples_per_second: float | None = None  # Offline, SingleStream
    completed_samples_per_second: float | None = None  # Server
    scheduled_samples_per_second: float | None = None  # Server
    # "p50", "p90", ..., "min", "max", "mean"; per query in MultiStream, per sample elsewhere
    latency_ns: dict[str, int] = field(default_factory=dict)
    query_count: int | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # An LLM's token figures where LoadGen logs them (use_token_latencies: Llama2; inferred from a
    # scaling factor: GPT-J): Offline's tokens/s or Server's completed tokens/s, and per sample
    # the time to first token and time per output token by percentile ("p50", "p90", "p99").
    tokens_per_second: float | None = None
    first_token_ns: dict[str, int] = field(default_factory=dict)
    time_per_output_token_ns: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def as_scenario(self, scenario: str) -> LoadgenResult:
        """The same result under the run's own scenario name (Interactive: LoadGen logs Server)."""
        return replace(self, scenario=scenario)


@dataclass(frozen=True)
class DetailLog:
    entries: dict[str, Any]  # the last value LoadGen logged for each key
    errors: list[str]
    warnings: list[str]
    # Numbers of the lines that are not whole :::MLLOG records (a log cut off mid-line); readers
    # that only look (the report, the checks) keep what parsed, a run's own parse refuses them.
    bad_lines: list[int] = field(default_factory=list)


def read_detail_log(detail_path: Path) -> DetailLog:
    entries: dict[str, Any] = {}
    errors: list[str] = []
    warnings: list[str] = []
    bad_lines: list[int] = []
    text = detail_path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = _record(line)
        if record is None:
            bad_lines.append(number)
            continue
        entries[record["key"]] = record["value"]
        metadata = record.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if metadata.get("is_error"):
            errors.append(str(record["value"]))
        elif metadata.get("is_warning"):
            warnings.append(str(record["value"]))
    return DetailLog(entries, errors, warnings, bad_lines)


def _record(line: str) -> dict[str, Any] | None:
    if not line.startswith(_MLLOG_PREFIX):
        return None
    try:
        record = json.loads(line[len(_MLLOG_PREFIX) :])
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or "key" not in record or "value" not in record:
        return None
    return record


# Keys that LoadGen writes only as a test ends: a log without them was cut off. Every mode logs
# power_end when its last phase is over; a performance verdict ends with the result block, whose
# last record is num_errors.
_END_KEYS = ("effective_scenario", "effective_test_mode", "power_end")
_VERDICT_MODES = ("PerformanceOnly", "SubmissionRun", "FindPeakPerformance")
_VERDICT_KEYS = ("result_validity", "num_errors")
_SCENARIO_METRIC = {
    "Offline": "result_samples_per_second",
    "SingleStream": "result_qps_with_loadgen_overhead",
    "MultiStream": "result_99.00_percentile_per_query_latency_ns",
    "Server": "result_completed_samples_per_sec",
}
_ACCURACY_MODES = ("AccuracyOnly", "SubmissionRun")
_SUMMARY_END = re.compile(r"^(No errors encountered during test\.|\d+ ERRORS? encountered\b)")


def check_complete(log_dir: Path, detail: DetailLog) -> None:
    """Refuse a log directory that LoadGen did not finish writing, naming the file and what is
    missing: such a run has no result, whatever parts of it say."""
    detail_path = log_dir / DETAIL_FILE
    if detail.bad_lines:
        first = detail.bad_lines[0]
        more = f" and {len(detail.bad_lines) - 1} more" if len(detail.bad_lines) > 1 else ""
        raise HarnessError(
            f"{detail_path} is incomplete or damaged: line {first}{more} is no whole LoadGen "
            "record (was the disk full, or the run killed?); the run has no result"
        )
    entries = detail.entries
    mode = str(entries.get("effective_test_mode", ""))
    scenario = str(entries.get("effective_scenario", ""))
    needed = list(_END_KEYS)
    if mode in _VERDICT_MODES:
        needed += [*_VERDICT_KEYS, _SCENARIO_METRIC.get(scenario, "result_validity")]
    missing = [key for key in needed if key not in entries]
    if missing:
        raise HarnessError(
            f"{detail_path} is incomplete: it lacks {', '.join(missing)}, which LoadGen writes as a "
            "test ends (was the disk full, or the run killed?); the run has no result"
        )
    summary_path = log_dir / SUMMARY_FILE
    summary = summary_path.read_text(errors="replace") if summary_path.is_file() else ""
    if not any(_SUMMARY_END.match(line) for line in summary.splitlines()):
        raise HarnessError(
            f"{summary_path} is missing or incomplete (no closing count of errors); the run has "
            "no result"
        )
    if mode in _ACCURACY_MODES:
        _check_accuracy_log(log_dir / ACCURACY_FILE)


def _check_accuracy_log(path: Path) -> None:
    """A JSON list, whole: its last bracket is the last thing LoadGen writes. The check reads only
    the ends of the file (accuracy logs of large benchmarks run to gigabytes)."""
    try:
        with path.open("rb") as stream:
            head = stream.read(64).lstrip()
            stream.seek(max(0, path.stat().st_size - 64))
            tail = stream.read().rstrip()
    except OSError as error:
        raise HarnessError(
            f"cannot read LoadGen's accuracy log {path}: {error.strerror or error}"
        ) from None
    if not head.startswith(b"[") or not tail.endswith(b"]"):
        raise HarnessError(
            f"{path} is incomplete (not a whole JSON list: was the disk full, or the run killed?);"
            " the run has no result"
        )


def read_summary_reasons(summary_path: Path) -> list[str]:
    """The failed checks, LoadGen's recommendations and early-stopping notes, as the summary words
    them (a note of TTFT's or TPOT's early stopping named so; a note's continued lines joined)."""
    reasons: list[str] = []
    advice: str | None = None  # inside an advice block: the prefix of its notes
    for line in summary_path.read_text(encoding="utf-8", errors="replace").splitlines():
        header = _ADVICE.match(line)
        if header:
            metric = header["metric"]
            advice = f"{metric.strip()} early stopping: " if metric else ""
            continue
        if advice is not None:
            if line.startswith(" * "):
                reasons.append(advice + line[3:].strip())
                continue
            if line.startswith(" ") and line.strip() and reasons:  # a note's next line
                reasons[-1] += " " + line.strip()
                continue
            advice = None
        match = _UNSATISFIED.match(line)
        if match:
            reasons.append(match["check"].strip() + UNMET)
    return reasons


def _latencies(entries: dict[str, Any]) -> dict[str, int]:
    per_query = any(_PER_QUERY_PERCENTILE_KEY.match(key) for key in entries)
    pattern = _PER_QUERY_PERCENTILE_KEY if per_query else _PERCENTILE_KEY
    middle = "_query" if per_query else ""
    latencies: dict[str, int] = {}
    for key, value in entries.items():
        match = pattern.match(key)
        if match:
            latencies[f"p{float(match[1]):g}"] = int(value)
    for name in ("min", "max", "mean"):
        key = f"result_{name}{middle}_latency_ns"
        if key in entries:
            latencies[name] = int(entries[key])
    return latencies


def _percentiles(entries: dict[str, Any], pattern: re.Pattern[str]) -> dict[str, int]:
    return {
        f"p{float(match[1]):g}": int(value)
        for key, value in entries.items()
        if (match := pattern.match(key))
    }


def _token_rate(entries: dict[str, Any]) -> float | None:
    key = next((key for key in _TOKEN_RATE_KEYS if key in entries), None)
    return None if key is None else float(entries[key])


def _optional_float(entries: dict[str, Any], key: str) -> float | None:
    return float(entries[key]) if key in entries else None


def parse_logs(log_dir: Path, *, require_complete: bool = True) -> LoadgenResult:
    """The result of the test whose logs are in `log_dir`. An unfinished log is a HarnessError
    unless `require_complete` is off (a report that shows what an interrupted run left). Errors that
    LoadGen logged make the result INVALID, each one a reason."""
    detail_path = log_dir / DETAIL_FILE
    if not detail_path.is_file():
        raise HarnessError(f"LoadGen wrote no {DETAIL_FILE} in {log_dir}: the test did not run")
    detail = read_detail_log(detail_path)
    if require_complete:
        check_complete(log_dir, detail)
    entries = detail.entries
    validity = entries.get("result_validity")
    valid = None if validity is None else validity == "VALID"
    reasons: list[str] = []
    if valid is False:
        summary_path = log_dir / SUMMARY_FILE
        reasons = read_summary_reasons(summary_path) if summary_path.is_file() else []
        if not reasons and entries.get("result_invalid_reason"):
            reasons = [str(entries["result_invalid_reason"]).strip()]
    if detail.errors:
        # The submission checker refuses a log with LoadGen errors, whatever its verdict says (a
        # negative target_qps is logged as an error, then replaced and the run called VALID).
        if valid is not None:  # an accuracy run keeps "no verdict"; the errors are its reasons
            valid = False
        reasons += [f"LoadGen error: {error}" for error in detail.errors]
    return LoadgenResult(
        scenario=str(entries.get("effective_scenario", entries.get("requested_scenario", ""))),
        mode=str(entries.get("effective_test_mode", entries.get("requested_test_mode", ""))),
        valid=valid,
        invalid_reasons=reasons,
        samples_per_second=_optional_float(
            entries,
            # SingleStream has one sample per query, so its QPS is its sample rate.
            "result_samples_per_second"
            if "result_samples_per_second" in entries
            else "result_qps_with_loadgen_overhead",
        ),
        completed_samples_per_second=_optional_float(entries, "result_completed_samples_per_sec"),
        scheduled_samples_per_second=_optional_float(entries, "result_scheduled_samples_per_sec"),
        latency_ns=_latencies(entries),
        query_count=int(entries["result_query_count"]) if "result_query_count" in entries else None,
        errors=detail.errors,
        warnings=detail.warnings,
        tokens_per_second=_token_rate(entries),
        first_token_ns=_percentiles(entries, _FIRST_TOKEN_KEY),
        time_per_output_token_ns=_percentiles(entries, _TPOT_KEY),
    )
