"""A run's page and its sections (the submission page shows the same sections per scenario)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from mlperf_harness.report import plots
from mlperf_harness.report.html import Markup, page, png, table, tag, text, verdict
from mlperf_harness.report.rundata import RunData, format_ns

# The LoadGen settings a reader looks for first, from the detail log's effective_* values.
LOADGEN_SETTINGS = (
    "effective_scenario",
    "effective_test_mode",
    "effective_target_qps",
    "effective_target_latency_ns",
    "effective_target_latency_percentile",
    "effective_samples_per_query",
    "effective_min_duration_ms",
    "effective_max_duration_ms",
    "effective_min_query_count",
    "effective_performance_sample_count",
    "effective_max_async_queries",
    "effective_qsl_rng_seed",
    "effective_sample_index_rng_seed",
    "effective_schedule_rng_seed",
    "effective_accuracy_log_rng_seed",
    "effective_accuracy_log_sampling_target",
)
CHECKS = (
    ("result_min_duration_met", "minimum duration"),
    ("result_min_queries_met", "minimum query count"),
    ("early_stopping_met", "early stopping"),
    ("result_perf_constraints_met", "latency constraint (Server)"),
)


# --- pieces ----------------------------------------------------------------------------------------


def yes_no(value: Any) -> Markup:
    if value is None:
        return text("n/a")
    return verdict("yes" if value else "NO", bool(value))


def run_verdict(run: RunData) -> Markup:
    return verdict(run.verdict, run.loadgen.valid)


def headline(run: RunData) -> list[Markup]:
    """Verdict, the metric against its bound, and LoadGen's reasons for an INVALID result; an
    accuracy run's accuracy."""
    rows: list[Sequence[Any]] = [("result", run_verdict(run))]
    if run.loadgen.valid is not None:
        metric = run.metric()
        rows.append((metric.name, metric.value))
        rows.append(("bound", within(metric.bound, metric.within)))
    accuracy = (run.result or {}).get("accuracy")
    line = run.accuracy_line or (accuracy.get("line") if isinstance(accuracy, dict) else None)
    if line:
        rows.append(("accuracy", str(line)))
    if isinstance(accuracy, dict) and "passed" in accuracy:
        rows.append(("accuracy target met", yes_no(accuracy.get("passed"))))
    for key, label in CHECKS:
        if key in run.detail:
            rows.append((label, yes_no(run.detail[key])))
    out = [table(None, rows)]
    if run.loadgen.invalid_reasons:
        out.append(tag("p", "Why LoadGen judged the run INVALID:"))
        out.append(tag("ul", (tag("li", reason) for reason in run.loadgen.invalid_reasons)))
    if run.loadgen.errors:
        out.append(tag("p", "LoadGen logged errors:", class_="warning"))
        out.append(tag("ul", (tag("li", error) for error in run.loadgen.errors)))
    if (run.result or {}).get("stand_in"):
        notice = str((run.result or {}).get("notice") or "stand-in model: not an MLPerf result")
        out.append(tag("p", notice, class_="warning"))
    return out


def within(bound: str, within: bool | None) -> Markup:
    if within is None:
        return text(bound)
    return Markup(f"{text(bound)} {verdict('within' if within else 'EXCEEDED', within)}")


def latency_section(run: RunData) -> list[Markup]:
    latency = run.loadgen.latency_ns
    bound = run.target_latency_ns
    what = "per-query latency" if run.per_query_latency else "latency"
    out = [tag("h3", "Latency")]
    timeline = run.timeline if run.timeline is not None and run.timeline.histogram else None
    shift = run.handover_ns
    estimates = {k: v + shift for k, v in timeline.percentiles_ns().items()} if timeline else {}
    if timeline is not None:
        shown = ("p50", "p90", "p99")
        marks = plots.Marks(
            harness={k: v for k, v in estimates.items() if k in shown},
            loadgen={k: float(v) for k, v in latency.items() if k in shown},
            bound_ns=bound,
        )
        out.append(png(plots.latency_distribution(timeline, marks, shift), "latency distribution"))
        notes = [
            "The distribution is the harness's timeline: each sample from the harness receiving "
            "it to its batch going back to LoadGen. LoadGen's latencies (the official figures, "
            "dotted) run from LoadGen's scheduled issue time, so they also hold any wait before "
            "the harness got the sample (LoadGen's issue thread late, or waiting for the GIL)."
        ]
        if shift:
            notes.append(
                f"Offline: LoadGen took {format_ns(shift)} to hand its query to the harness (its "
                "Python binding builds one object per sample first); that time is added to the "
                "harness's latencies here, so both count from LoadGen's start."
            )
        if run.per_query_latency:
            notes.append(
                "MultiStream: LoadGen's figures are per query (8 samples), the harness's per "
                "sample; a query is one batch, so its samples share its latency."
            )
        out.extend(tag("p", note, class_="note") for note in notes)
    else:
        out.append(tag("p", f"No harness timeline: {run.timeline_note}.", class_="warning"))
        if latency:
            out.append(png(plots.percentile_chart(latency, bound, what), "latency percentiles"))
    rows: list[Sequence[str]] = []
    for name in ("min", "p50", "p90", "p95", "p97", "p99", "p99.9", "max", "mean"):
        ours: float | None = estimates.get(name)
        if timeline is not None and name in ("min", "max", "mean"):
            ours = (
                shift
                + {
                    "min": timeline.latency_min_ns,
                    "max": timeline.latency_max_total_ns,
                    "mean": timeline.latency_mean_total_ns,
                }[name]
            )
        if name in latency or ours is not None:
            rows.append((name, format_ns(latency.get(name)), format_ns(ours)))
    if rows:
        header = ["", f"LoadGen, {'per query' if run.per_query_latency else 'per sample'}"]
        if timeline is not None:
            header.append("harness timeline (from its histogram)")
        else:
            rows = [row[:2] for row in rows]
        out.append(table(header, rows, numeric=(1, 2)))
    return out


def timeline_section(run: RunData) -> list[Markup]:
    timeline = run.timeline
    if timeline is None or not timeline.completed:
        return []
    offline = run.scenario == "Offline"
    title = "Completion timeline" if offline else "Over the run"
    target = run.detail.get("effective_target_qps") if run.scenario == "Server" else None
    image = plots.over_time(
        timeline,
        offline=offline,
        bound_ns=run.target_latency_ns,
        target_qps=float(target) if target else None,
        min_duration_s=run.min_duration_s,
        shift_s=run.handover_ns / 1e9,
    )
    loadgen_samples = run.loadgen_sample_count
    rows: list[Sequence[Any]] = [
        ("samples LoadGen issued", "n/a" if loadgen_samples is None else f"{loadgen_samples:,}"),
        ("samples the harness received", f"{timeline.issued_samples:,}"),
        ("samples the harness completed", f"{timeline.completed_samples:,}"),
        ("batches completed", f"{timeline.completed_batches:,}"),
        (
            "mean batch size",
            f"{timeline.completed_samples / timeline.completed_batches:,.1f}"
            if timeline.completed_batches
            else "n/a",
        ),
        ("first sample received to last completion", format_ns(timeline.duration_ns)),
        ("time bin (as recorded)", format_ns(timeline.bin_width_ns)),
    ]
    if run.handover_ns:
        rows.append(("LoadGen's hand-over of the query", format_ns(run.handover_ns)))
    return [tag("h3", title), png(image, title), table(None, rows, numeric=(1,))]


def settings_section(run: RunData) -> list[Markup]:
    out = [tag("h3", "Settings")]
    settings = (run.result or {}).get("settings")
    if isinstance(settings, dict) and settings:
        rows: list[Sequence[Any]] = []
        for name, entry in settings.items():
            if isinstance(entry, dict):
                rows.append((name, plain(entry.get("value")), entry.get("from")))
            else:
                rows.append((name, plain(entry), ""))
        out.append(tag("p", "The harness's settings (result.json) and where each came from:"))
        out.append(table(["setting", "value", "from"], rows))
    loadgen_rows = [
        (key.removeprefix("effective_"), plain(run.detail[key]))
        for key in LOADGEN_SETTINGS
        if key in run.detail
    ]
    if loadgen_rows:
        out.append(tag("p", "LoadGen's effective settings (detail log):"))
        out.append(table(["LoadGen setting", "value"], loadgen_rows))
    command = (run.result or {}).get("command")
    if isinstance(command, list) and command:
        out.append(tag("p", "Command line arguments:"))
        out.append(tag("pre", " ".join(str(arg) for arg in command)))
    return out


def run_system_section(run: RunData) -> list[Markup]:
    result = run.result or {}
    rows: list[Sequence[Any]] = [("system", run.system_name)]
    for key in ("backend", "model_sha256"):
        if result.get(key):
            rows.append((key, result[key]))
    provenance = result.get("provenance")
    if isinstance(provenance, dict):
        rows.extend((f"provenance: {k}", plain(v)) for k, v in provenance.items())
    for key in ("loadgen_version", "test_datetime", "sut_name"):
        if key in run.detail:
            rows.append((key, plain(run.detail[key])))
    rows.append(("log directory", str(run.directory)))
    return [tag("h3", "System and provenance"), table(None, rows)]


def plain(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return "" if value is None else str(value)


def run_body(run: RunData, level: str = "h2") -> list[Markup]:
    out = [tag(level, run.title)]
    out.extend(headline(run))
    out.extend(latency_section(run))
    out.extend(timeline_section(run))
    out.extend(settings_section(run))
    out.extend(run_system_section(run))
    return out


def generated() -> Markup:
    return tag("p", f"Generated {time.strftime('%Y-%m-%d %H:%M:%S %Z')}.", class_="note")


# --- the page --------------------------------------------------------------------------------------


def run_page(run: RunData) -> str:
    body = [tag("h1", run.title), generated()]
    body.extend(run_body(run, "h2")[1:])
    return page(f"MLPerf run: {run.title}", body)
