"""One run's log directory read into what the report shows: LoadGen's verdict and figures, our
result.json (settings and where each came from), the harness timeline where there is one."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.timeline import TIMELINE_FILE, Timeline, read_timeline
from mlperf_harness.loadgen.results import DETAIL_FILE, LoadgenResult, parse_logs, read_detail_log
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import ACCURACY_TXT, RESULT_FILE
from mlperf_harness.submission.rules import METRIC_KEYS


@dataclass(frozen=True)
class Metric:
    """The scenario's figure of merit and what it is held against."""

    name: str
    value: str
    bound: str  # in words: "p99 <= 15.000 ms", "none (throughput)"
    within: bool | None  # None where there is no bound to be within


@dataclass(frozen=True)
class RunData:
    directory: Path
    loadgen: LoadgenResult
    detail: dict[str, Any]  # the detail log's last value per key
    result: dict[str, Any] | None  # result.json; None in a staged tree
    timeline: Timeline | None
    timeline_note: str  # why there is no timeline, or where it came from
    accuracy_line: str | None  # accuracy.txt's first line (accuracy runs)
    # Names from where the run lies (a staged tree's results/<system>/<model>/), for runs without
    # a result.json.
    system_hint: str | None = None
    model_hint: str | None = None

    @property
    def scenario(self) -> str:
        return self.loadgen.scenario

    @property
    def mode(self) -> str:
        return self.loadgen.mode

    @property
    def benchmark(self) -> str:
        if self.result is not None and self.result.get("benchmark"):
            return str(self.result["benchmark"])
        return self.model_hint or "?"

    @property
    def system_name(self) -> str:
        if self.result is not None and self.result.get("system_name"):
            return str(self.result["system_name"])
        return self.system_hint or "?"

    @property
    def audit_test(self) -> str | None:
        test = self.result.get("audit_test") if self.result is not None else None
        return str(test) if test else None

    @property
    def title(self) -> str:
        audit = f" audit {self.audit_test}" if self.audit_test else ""
        return f"{self.benchmark} {self.scenario} {self.mode}{audit} on {self.system_name}"

    @property
    def verdict(self) -> str:
        return {True: "VALID", False: "INVALID", None: "no performance verdict"}[self.loadgen.valid]

    @property
    def target_latency_ns(self) -> int | None:
        """Server's latency bound (LoadGen's effective target latency); None elsewhere."""
        if self.scenario != "Server":
            return None
        value = int(self.detail.get("effective_target_latency_ns") or 0)
        return value or None

    @property
    def target_percentile(self) -> float:
        """The percentile the scenario's latency figure is taken at (0.9 SingleStream, 0.99 else)."""
        return float(self.detail.get("effective_target_latency_percentile") or 0.99)

    @property
    def per_query_latency(self) -> bool:
        """MultiStream: LoadGen's latencies are per query, the timeline's per sample."""
        return self.scenario == "MultiStream"

    @property
    def min_duration_s(self) -> float | None:
        value = self.detail.get("effective_min_duration_ms")
        return None if value is None else float(value) / 1000

    @property
    def loadgen_sample_count(self) -> int | None:
        """Samples LoadGen issued in the timed run: its queries (SingleStream and MultiStream stop
        generating early, so not generated_query_count) times samples per query."""
        queries = self.detail.get("result_query_count")
        per_query = self.detail.get("generated_samples_per_query")
        if queries is None or per_query is None:
            return None
        return int(queries) * int(per_query)

    @property
    def handover_ns(self) -> float:
        """Offline: how long LoadGen took from starting its one query to handing the samples to
        the harness (its Python binding builds an object per sample first). LoadGen's latencies
        include it, the timeline's do not, and as all samples share the query's start it is the
        same for each: the median difference of the figures both report (one event, say the
        maximum, can be off by a preemption on a busy machine). 0 elsewhere, where each query's
        hand-over is not known."""
        timeline = self.timeline
        if self.scenario != "Offline" or timeline is None or not timeline.histogram:
            return 0.0
        ours = {
            **timeline.percentiles_ns(),
            "min": float(timeline.latency_min_ns),
            "max": float(timeline.latency_max_total_ns),
            "mean": timeline.latency_mean_total_ns,
        }
        differences = [v - ours[k] for k, v in self.loadgen.latency_ns.items() if k in ours]
        return max(0.0, statistics.median(differences)) if differences else 0.0

    def metric(self) -> Metric:
        return scenario_metric(self)


def scenario_metric(run: RunData) -> Metric:
    result, detail = run.loadgen, run.detail
    latency = result.latency_ns
    if run.scenario == "Offline":
        rate = f"{_number(result.samples_per_second)} samples/s"
        return Metric("samples/s", rate, "none: throughput", None)
    if run.scenario == "Server":
        bound = run.target_latency_ns
        name = f"p{run.target_percentile * 100:g}"
        observed = latency.get(name)
        within = None if bound is None or observed is None else observed <= bound
        target = detail.get("effective_target_qps")
        rate = f"{_number(result.completed_samples_per_second)} completed samples/s"
        if target is not None:
            rate += f" at a target of {_number(float(target))} queries/s"
        limit = f"{name} latency <= {format_ns(bound)}" if bound else "no latency bound set"
        if observed is not None:
            limit += f" (observed {format_ns(observed)})"
        return Metric("completed samples/s", rate, limit, within)
    # SingleStream: p90 latency, MultiStream: p99 per-query latency; early stopping's estimate is
    # what a submission reports.
    name = f"p{run.target_percentile * 100:g}"
    key = METRIC_KEYS[Scenario.parse(run.scenario)]
    estimate = int(detail.get(key) or 0)
    observed = latency.get(name)
    shown = format_ns(observed) if observed is not None else "n/a"
    if estimate:
        shown += f" (early-stopping estimate {format_ns(estimate)})"
    what = "per-query latency" if run.per_query_latency else "latency"
    return Metric(f"{name} {what}", shown, "none: lower is better", None)


def format_ns(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    if ns >= 10e9:
        return f"{ns / 1e9:,.1f} s"
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def is_run_dir(directory: Path) -> bool:
    return (directory / DETAIL_FILE).is_file()


def read_run(
    directory: Path,
    *,
    system_hint: str | None = None,
    model_hint: str | None = None,
) -> RunData:
    """A run's log directory: LoadGen's detail log at least; result.json, harness_timeline.json
    and accuracy.txt where they are."""
    if not directory.is_dir():
        raise HarnessError(f"no such run directory: {directory}")
    if not is_run_dir(directory):
        raise HarnessError(f"{directory} holds no {DETAIL_FILE}: not a LoadGen run directory")
    loadgen = parse_logs(directory)
    detail = read_detail_log(directory / DETAIL_FILE).entries
    result = _read_json(directory / RESULT_FILE)
    timeline, note = _find_timeline(directory)
    accuracy = directory / ACCURACY_TXT
    accuracy_line = None
    if accuracy.is_file():
        lines = accuracy.read_text(encoding="utf-8", errors="replace").splitlines()
        accuracy_line = lines[0].strip() if lines else None
    return RunData(
        directory, loadgen, detail, result, timeline, note, accuracy_line, system_hint, model_hint
    )


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HarnessError(f"cannot read {path}: {error}") from None
    if not isinstance(data, dict):
        raise HarnessError(f"{path} does not hold a JSON object")
    return data


def _find_timeline(directory: Path) -> tuple[Timeline | None, str]:
    path = directory / TIMELINE_FILE
    if path.is_file():
        try:
            return read_timeline(path), f"from {path}"
        except HarnessError as error:
            return None, f"{TIMELINE_FILE} could not be read: {error}"
    return None, (
        f"this run has no {TIMELINE_FILE} (it was made before the harness recorded one, or the "
        "directory holds LoadGen's logs only): the latency percentiles below are LoadGen's, "
        "and there is no distribution or timeline to draw"
    )
