"""The report's figures, drawn with matplotlib's Agg backend into PNG bytes (no display, no files).

Figures are made through `matplotlib.figure.Figure` directly, not pyplot: no global state, so a
report can be drawn from any thread and never opens a window.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from mlperf_harness.harness.timeline import Timeline

WIDTH_IN, PANEL_HEIGHT_IN, DPI = 10.0, 3.2, 100
MARK_COLORS = {"p50": "#2a9d8f", "p90": "#e9a23b", "p99": "#e76f51"}
BOUND_COLOR = "#b00020"
DISPLAY_BINS = 80  # of the latency histogram: the recorded buckets are far finer
DISPLAY_POINTS = 200  # time bins drawn at most: 1024 recorded bins read as noise
OFFLINE_POINTS = 60
LOG_SCALE_SPAN = 30.0  # latencies spanning more than this factor get a log axis

Floats = npt.NDArray[np.float64]
THOUSANDS = FuncFormatter(lambda value, _position: f"{value:,.0f}")


def latency_unit(ns: float) -> tuple[float, str]:
    """The divisor and name of the unit that suits latencies around `ns`."""
    if ns >= 2e9:
        return 1e9, "s"
    if ns >= 2e6:
        return 1e6, "ms"
    if ns >= 2e3:
        return 1e3, "µs"
    return 1.0, "ns"


def _label(ns: float) -> str:
    """A latency in the unit that suits it, whatever the axis's unit."""
    divisor, unit = latency_unit(ns)
    return f"{ns / divisor:.3g} {unit}"


def _png(figure: Figure) -> bytes:
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI)  # tight_layout already fitted it
    return out.getvalue()


@dataclass(frozen=True)
class Marks:
    """Vertical lines on the latency plots: the timeline's own percentiles (solid), LoadGen's
    (dotted, the official figures) and the scenario's bound (dashed)."""

    harness: Mapping[str, float]
    loadgen: Mapping[str, float]
    bound_ns: float | None = None

    def values(self) -> list[float]:
        return [
            *self.harness.values(),
            *self.loadgen.values(),
            *([self.bound_ns] if self.bound_ns else []),
        ]


def _draw_marks(axes: Axes, marks: Marks, divisor: float) -> None:
    for name, ns in marks.harness.items():
        color = MARK_COLORS.get(name, "#555555")
        axes.axvline(
            ns / divisor, color=color, linewidth=1.6, label=f"{name} {_label(ns)} (harness)"
        )
    for name, ns in marks.loadgen.items():
        color = MARK_COLORS.get(name, "#555555")
        axes.axvline(
            ns / divisor,
            color=color,
            linewidth=1.6,
            linestyle=":",
            label=f"{name} {_label(ns)} (LoadGen)",
        )
    if marks.bound_ns:
        axes.axvline(
            marks.bound_ns / divisor,
            color=BOUND_COLOR,
            linestyle="--",
            linewidth=1.6,
            label=f"bound {_label(marks.bound_ns)}",
        )


def _latency_axis(axes: Axes, log: bool, unit: str, shift_ns: float) -> None:
    if log:
        axes.set_xscale("log")
        axes.xaxis.set_minor_formatter(NullFormatter())
    what = f"latency ({unit}{', log scale' if log else ''})"
    if shift_ns:
        what += f"; harness latency + {_label(shift_ns)} LoadGen hand-over"
    axes.set_xlabel(what)


def latency_distribution(timeline: Timeline, marks: Marks, shift_ns: float = 0.0) -> bytes:
    """Left: how many samples took how long. Right: the share of samples slower than each
    latency, on a log scale, where p90, p99 and the bound are read off. `shift_ns` is added to
    every recorded latency (Offline: the time LoadGen took to hand the query over)."""
    buckets = timeline.histogram
    lower = np.array([b.lower_ns for b in buckets], dtype=float) + shift_ns
    width = np.array([b.width_ns for b in buckets], dtype=float)
    count = np.array([b.count for b in buckets], dtype=float)
    low = max(1.0, float(lower.min()))
    high = max(low * 1.05, float((lower + width).max()), *marks.values())
    log = high / low > LOG_SCALE_SPAN
    divisor, unit = latency_unit(float(np.average(lower + width / 2, weights=count)))
    figure = Figure(figsize=(WIDTH_IN, PANEL_HEIGHT_IN * 1.25))
    left, right = figure.subplots(1, 2)

    # The recorded buckets regrouped into display bins by their middles.
    if log:
        edges = np.geomspace(low * 0.98, high * 1.02, DISPLAY_BINS + 1)
    else:
        pad = (high - low) * 0.02
        edges = np.linspace(max(0.0, low - pad), high + pad, DISPLAY_BINS + 1)
    shown = _spread(lower, width, count, edges)
    left.bar(
        edges[:-1] / divisor,
        shown,
        width=np.diff(edges) / divisor,
        align="edge",
        color="#457b9d",
        edgecolor="none",
    )
    left.set_ylabel("samples")
    left.set_title("latency distribution")
    _latency_axis(left, log, unit, shift_ns)
    _draw_marks(left, marks, divisor)

    # Share slower than x: 1 - CDF at each bucket's upper edge.
    slower = 1.0 - np.cumsum(count) / count.sum()
    upper = (lower + width) / divisor
    keep = slower > 0
    right.step(upper[keep], slower[keep], where="post", color="#1d3557")
    right.set_yscale("log")
    floor = max(1.0 / count.sum(), 1e-6)
    right.set_ylim(floor / 2, 1.0)
    for fraction in (0.5, 0.1, 0.01, 0.001):
        if fraction >= floor:
            right.axhline(fraction, color="#cccccc", linewidth=0.8, zorder=0)
    right.set_ylabel("share of samples slower")
    right.set_title("tail: share of samples slower than x")
    _latency_axis(right, log, unit, shift_ns)
    _draw_marks(right, marks, divisor)
    right.set_xlim(left.get_xlim())
    handles, labels = left.get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return _png(figure)


def _spread(lower: Floats, width: Floats, count: Floats, edges: Floats) -> Floats:
    """The samples of each recorded bucket spread evenly over it, summed per display bin: binning
    by bucket middles would alias (a display bin holding three buckets next to one holding four
    draws a comb that is not in the data)."""
    points = np.column_stack([lower, lower + width]).ravel()
    below = np.concatenate([[0.0], np.cumsum(count)])
    cumulative = np.column_stack([below[:-1], below[1:]]).ravel()
    return np.diff(np.interp(edges, points, cumulative))


def percentile_chart(latency_ns: Mapping[str, int], bound_ns: float | None, what: str) -> bytes:
    """Without a timeline: LoadGen's percentiles as bars, the bound as a line."""
    names = [
        n for n in ("min", "p50", "p90", "p95", "p97", "p99", "p99.9", "max") if n in latency_ns
    ]
    values = [float(latency_ns[n]) for n in names]
    divisor, unit = latency_unit(max([*values, bound_ns or 0.0, 1.0]))
    figure = Figure(figsize=(WIDTH_IN, PANEL_HEIGHT_IN))
    axes = figure.subplots()
    colors = [MARK_COLORS.get(n, "#457b9d") for n in names]
    bars = axes.barh(names, [v / divisor for v in values], color=colors)
    axes.bar_label(bars, labels=[_label(v) for v in values], fontsize=8, padding=3)
    if bound_ns:
        axes.axvline(
            bound_ns / divisor, color=BOUND_COLOR, linestyle="--", label=f"bound {_label(bound_ns)}"
        )
        axes.legend(fontsize=8, loc="lower right")
    axes.invert_yaxis()
    axes.set_xlabel(f"{what} ({unit})")
    axes.set_title(f"LoadGen's {what} percentiles (detail log)")
    axes.margins(x=0.15)
    figure.tight_layout()
    return _png(figure)


@dataclass(frozen=True)
class Coarse:
    """The recorded time bins merged into at most DISPLAY_POINTS for drawing."""

    starts: Floats  # seconds
    width_s: float
    issued: Floats
    completed: Floats
    latency_mean: Floats  # ns, NaN where nothing completed
    latency_max: Floats  # ns, NaN where nothing completed


def coarsen(timeline: Timeline, points: int = DISPLAY_POINTS) -> Coarse:
    n = len(timeline.completed)
    group = max(1, -(-n // points))
    width_s = timeline.bin_width_ns * group / 1e9

    def merged(values: list[float], how: str) -> Floats:
        padded = np.zeros(-(-n // group) * group)
        padded[:n] = values
        shaped = padded.reshape(-1, group)
        out: Floats = shaped.max(axis=1) if how == "max" else shaped.sum(axis=1)
        return out

    completed = merged([float(c) for c in timeline.completed], "sum")
    sums = merged(
        [
            0.0 if m is None else m * c
            for m, c in zip(timeline.latency_mean_ns, timeline.completed, strict=True)
        ],
        "sum",
    )
    maxima = merged([float(m) for m in timeline.latency_max_ns], "max")
    with np.errstate(invalid="ignore", divide="ignore"):
        means: Floats = np.where(completed > 0, sums / completed, np.nan)
    maxima = np.where(completed > 0, maxima, np.nan)
    issued = merged([float(i) for i in timeline.issued], "sum")
    starts: Floats = (np.arange(len(completed)) * width_s).astype(np.float64)
    return Coarse(starts, width_s, issued, completed, means, maxima)


def over_time(
    timeline: Timeline,
    *,
    offline: bool,
    bound_ns: float | None,
    target_qps: float | None,
    min_duration_s: float | None,
    shift_s: float = 0.0,
) -> bytes:
    """Top: samples issued and completed per second through the run (Offline: samples completed
    so far). Bottom: the latency of the samples completed in each time bin (Offline: the
    completion rate). `shift_s`: when the harness received the first samples, in LoadGen's time."""
    # Offline completes in whole batches (1024 samples in the null benchmark): finer bins than
    # this draw every batch as a spike.
    bins = coarsen(timeline, OFFLINE_POINTS if offline else DISPLAY_POINTS)
    ends = bins.starts + bins.width_s + shift_s
    figure = Figure(figsize=(WIDTH_IN, 2 * PANEL_HEIGHT_IN))
    top, bottom = figure.subplots(2, 1, sharex=True)
    span = _span(bins.width_s)
    if offline:
        done = np.concatenate([[0.0], np.cumsum(bins.completed)])
        top.step(
            np.concatenate([[shift_s], ends]),
            done,
            where="post",
            color="#1d3557",
            label="samples completed so far",
        )
        top.axhline(
            timeline.issued_samples,
            color="#888888",
            linestyle=":",
            label=f"samples issued ({timeline.issued_samples:,})",
        )
        top.set_ylabel("samples")
        top.yaxis.set_major_formatter(THOUSANDS)
        top.set_title("completion timeline")
        rate = bins.completed / bins.width_s
        bottom.step(ends, rate, where="pre", color="#457b9d")
        bottom.set_ylabel("samples/s")
        bottom.set_title(f"completion rate ({span} bins)")
        bottom.set_ylim(bottom=0)
        bottom.yaxis.set_major_formatter(THOUSANDS)
    else:
        top.step(ends, bins.issued / bins.width_s, where="pre", color="#999999", label="issued")
        top.step(
            ends, bins.completed / bins.width_s, where="pre", color="#1d3557", label="completed"
        )
        if target_qps:
            top.axhline(
                target_qps,
                color="#e76f51",
                linestyle="--",
                linewidth=1,
                label=f"target {target_qps:,.0f}/s",
            )
        top.set_ylabel("samples/s")
        top.set_title(f"samples issued and completed per second ({span} bins)")
        top.set_ylim(bottom=0)
        top.yaxis.set_major_formatter(THOUSANDS)
        _latency_over_time(bottom, bins, ends, bound_ns)
    if shift_s > 0:
        for axes in (top, bottom):
            axes.axvspan(0, shift_s, color="#f1e3c6", zorder=0)
        top.fill_between([], [], color="#f1e3c6", label="LoadGen handing the query over")
    if min_duration_s:
        for axes in (top, bottom):
            axes.axvline(min_duration_s, color="#777777", linestyle="-.", linewidth=1)
        top.plot([], [], color="#777777", linestyle="-.", label="minimum duration")
    top.legend(fontsize=8, loc="best")
    last = float(ends[-1]) if len(ends) else 1.0
    bottom.set_xlim(0, max(last, min_duration_s or 0.0) * 1.01)
    bottom.set_xlabel(
        "time since LoadGen's first issue (s)" if offline else "time since the first issue (s)"
    )
    figure.tight_layout()
    return _png(figure)


def _latency_over_time(axes: Axes, bins: Coarse, ends: Floats, bound_ns: float | None) -> None:
    seen = ~np.isnan(bins.latency_max)
    if not seen.any():
        axes.set_title("no samples completed")
        return
    divisor, unit = latency_unit(float(np.nanmedian(bins.latency_mean)))
    middles = ends - bins.width_s / 2
    axes.plot(middles, bins.latency_max / divisor, color="#e76f51", linewidth=1, label="max")
    axes.plot(middles, bins.latency_mean / divisor, color="#1d3557", linewidth=1.2, label="mean")
    if bound_ns:
        axes.axhline(
            bound_ns / divisor, color=BOUND_COLOR, linestyle="--", label=f"bound {_label(bound_ns)}"
        )
    low = max(float(np.nanmin(bins.latency_mean)), 1.0)
    if float(np.nanmax(bins.latency_max)) > LOG_SCALE_SPAN * low:
        axes.set_yscale("log")
    else:
        axes.set_ylim(bottom=0)
    axes.set_ylabel(f"latency ({unit})")
    axes.set_title("latency of the samples completed in each bin (harness timeline)")
    axes.legend(fontsize=8, loc="best")


def _span(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    return f"{seconds * 1e3:.3g} ms" if seconds * 1e3 >= 1 else f"{seconds * 1e6:.3g} µs"
