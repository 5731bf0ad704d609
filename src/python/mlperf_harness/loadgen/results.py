"""Parse LoadGen's logs into one result record.

Numbers come from `mlperf_log_detail.txt` (`:::MLLOG {json}` lines, exact values); the verdict's
reasons come from `mlperf_log_summary.txt`, which words them for people ("Min duration satisfied : NO"
and the "Recommendations" that follow).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError

SUMMARY_FILE = "mlperf_log_summary.txt"
DETAIL_FILE = "mlperf_log_detail.txt"
ACCURACY_FILE = "mlperf_log_accuracy.json"

_MLLOG_PREFIX = ":::MLLOG "
_PERCENTILE_KEY = re.compile(r"^result_(\d+\.\d+)_percentile_latency_ns$")
# MultiStream's metric is the latency of whole queries (8 samples), logged under separate keys.
_PER_QUERY_PERCENTILE_KEY = re.compile(r"^result_(\d+\.\d+)_percentile_per_query_latency_ns$")
_UNSATISFIED = re.compile(r"^\s*(?P<check>[A-Za-z ]+?)\s*(satisfied)?\s*:\s*NO\s*$")


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DetailLog:
    entries: dict[str, Any]  # the last value LoadGen logged for each key
    errors: list[str]
    warnings: list[str]


def read_detail_log(detail_path: Path) -> DetailLog:
    entries: dict[str, Any] = {}
    errors: list[str] = []
    warnings: list[str] = []
    for line in detail_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith(_MLLOG_PREFIX):
            continue
        try:
            record = json.loads(line[len(_MLLOG_PREFIX) :])
        except json.JSONDecodeError:
            continue  # LoadGen may be cut off mid-line when the process dies; keep what parsed
        entries[record["key"]] = record["value"]
        metadata = record.get("metadata", {})
        if metadata.get("is_error"):
            errors.append(str(record["value"]))
        elif metadata.get("is_warning"):
            warnings.append(str(record["value"]))
    return DetailLog(entries, errors, warnings)


def read_summary_reasons(summary_path: Path) -> list[str]:
    """The failed checks, LoadGen's recommendations and early-stopping notes, as the summary words them."""
    reasons: list[str] = []
    in_recommendations = False
    for line in summary_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(("Recommendations:", "Early Stopping Result:")):
            in_recommendations = True
            continue
        if in_recommendations:
            if line.startswith(" * "):
                reasons.append(line[3:].strip())
                continue
            in_recommendations = False
        match = _UNSATISFIED.match(line)
        if match:
            reasons.append(f"{match['check'].strip()} not satisfied")
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


def _optional_float(entries: dict[str, Any], key: str) -> float | None:
    return float(entries[key]) if key in entries else None


def parse_logs(log_dir: Path) -> LoadgenResult:
    detail_path = log_dir / DETAIL_FILE
    if not detail_path.is_file():
        raise HarnessError(f"LoadGen wrote no {DETAIL_FILE} in {log_dir}: the test did not run")
    detail = read_detail_log(detail_path)
    entries = detail.entries
    validity = entries.get("result_validity")
    valid = None if validity is None else validity == "VALID"
    reasons: list[str] = []
    if valid is False:
        summary_path = log_dir / SUMMARY_FILE
        reasons = read_summary_reasons(summary_path) if summary_path.is_file() else []
        if not reasons and entries.get("result_invalid_reason"):
            reasons = [str(entries["result_invalid_reason"]).strip()]
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
    )
