"""The harness's own record of a run, `harness_timeline.json` beside LoadGen's logs.

LoadGen logs latency percentiles only (its per-sample trace costs throughput and is off), which is
too little to draw a run. The native batch sources record, at a fixed cost per issue call and per
batch and in fixed memory (src/cpp/harness_native/src/timeline.hpp):

- a latency histogram, log-linear: exact below 256 ns, then each power of two cut into 128
  buckets (at most 0.8% wide), from which percentiles are estimated;
- time bins from the first issue: samples issued (when the batch source received them; counted
  when their batch completes, so a sample never completed is in the issued total only), samples
  and batches completed (just before the batch went back to LoadGen), and the mean and maximum
  latency of the samples completed in each bin. There are at most 1024 bins of 2^20 ns (about
  1 ms): a longer run merges neighbours in pairs, doubling the width as often as it needs.

A sample's latency here runs from the batch source receiving it to its batch being handed to
LoadGen. LoadGen's own latency runs from its scheduled issue time to its completion, so it is a
little longer (in Server, by any delay of LoadGen's issue thread); the detail log stays the
official figure. In MultiStream, LoadGen's percentiles are per query (8 samples) and these per
sample; a query is one batch, so its samples share its latency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.errors import HarnessError
from mlperf_harness.json_files import read_json

TIMELINE_FILE = "harness_timeline.json"
FORMAT = "mlperf_harness.harness_timeline/1"
# The percentiles LoadGen's detail log reports, estimated here from the histogram too.
PERCENTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p97": 0.97, "p99": 0.99, "p99.9": 0.999}


@dataclass(frozen=True)
class LatencyBucket:
    lower_ns: int
    width_ns: int  # the bucket holds latencies in [lower_ns, lower_ns + width_ns)
    count: int


@dataclass(frozen=True)
class Timeline:
    bin_width_ns: int
    # One entry per time bin from the first issue (bin i covers [i, i + 1) * bin_width_ns).
    issued: tuple[int, ...]
    completed: tuple[int, ...]
    batches: tuple[int, ...]
    latency_mean_ns: tuple[float | None, ...]  # None where nothing completed in the bin
    latency_max_ns: tuple[int, ...]
    histogram: tuple[LatencyBucket, ...]  # buckets with a count, in latency order
    issued_samples: int
    completed_samples: int
    completed_batches: int
    latency_min_ns: int
    latency_max_total_ns: int
    latency_mean_total_ns: float
    duration_ns: int  # first issue to last completion
    # When the first issue was, on the host's monotonic clock (the native steady_clock, which is
    # CLOCK_MONOTONIC, as Python's time.monotonic_ns): other records of the same host, such as
    # benchmarks/stall_probe.py's, place themselves in the bins by it. None in older files.
    first_issue_ns: int | None = None

    def percentile_ns(self, fraction: float) -> float:
        """The latency below which `fraction` of the samples lie, as LoadGen picks it (the sample
        at rank floor(fraction * count) in latency order), interpolated within its bucket."""
        total = sum(bucket.count for bucket in self.histogram)
        if total == 0:
            raise HarnessError("the timeline holds no completed samples: no latency percentiles")
        rank = min(total - 1, math.floor(fraction * total))
        below = 0
        for bucket in self.histogram:
            if rank < below + bucket.count:
                return bucket.lower_ns + bucket.width_ns * (rank - below + 0.5) / bucket.count
            below += bucket.count
        raise AssertionError("unreachable: rank < total")

    def percentiles_ns(self) -> dict[str, float]:
        if not self.histogram:
            return {}
        return {name: self.percentile_ns(fraction) for name, fraction in PERCENTILES.items()}

    def bin_start_s(self) -> list[float]:
        return [i * self.bin_width_ns / 1e9 for i in range(len(self.completed))]

    def to_json(self) -> dict[str, Any]:
        latency: dict[str, Any] = {
            "min": self.latency_min_ns,
            "max": self.latency_max_total_ns,
            "mean": round(self.latency_mean_total_ns),
        }
        latency.update({name: round(value) for name, value in self.percentiles_ns().items()})
        return {
            "format": FORMAT,
            "about": (
                "Recorded by the harness's batch sources: latency from a batch source receiving a "
                "sample to its batch being handed to LoadGen. LoadGen's detail log is the official "
                "figure. Percentiles here are estimates from the histogram."
            ),
            "samples": {
                "issued": self.issued_samples,
                "completed": self.completed_samples,
                "batches": self.completed_batches,
            },
            "duration_ns": self.duration_ns,
            **({} if self.first_issue_ns is None else {"first_issue_ns": self.first_issue_ns}),
            "latency_ns": latency,
            "histogram": {
                "scheme": "log-linear: exact below 256 ns, then 128 buckets per power of two",
                "buckets": [[b.lower_ns, b.width_ns, b.count] for b in self.histogram],
            },
            "bins": {
                "width_ns": self.bin_width_ns,
                "issued": list(self.issued),
                "completed": list(self.completed),
                "batches": list(self.batches),
                "latency_mean_ns": [None if m is None else round(m) for m in self.latency_mean_ns],
                "latency_max_ns": list(self.latency_max_ns),
            },
        }

    @classmethod
    def from_native(cls, record: Mapping[str, Any]) -> Timeline:
        """The dict a native batch source's timeline() returns."""
        completed = tuple(int(c) for c in record["completed"])
        sums = record["latency_sum_ns"]
        count = int(record["completed_samples"])
        return cls(
            bin_width_ns=int(record["bin_width_ns"]),
            issued=tuple(int(i) for i in record["issued"]),
            completed=completed,
            batches=tuple(int(b) for b in record["batches"]),
            latency_mean_ns=tuple(
                s / c if c else None for s, c in zip(sums, completed, strict=True)
            ),
            latency_max_ns=tuple(int(m) for m in record["latency_max_ns"]),
            histogram=tuple(
                LatencyBucket(int(lo), int(w), int(n)) for lo, w, n in record["histogram"]
            ),
            issued_samples=int(record["issued_samples"]),
            completed_samples=count,
            completed_batches=int(record["completed_batches"]),
            latency_min_ns=int(record["latency_min_ns"]),
            latency_max_total_ns=int(record["latency_max_total_ns"]),
            latency_mean_total_ns=float(record["latency_sum_total_ns"]) / count if count else 0.0,
            duration_ns=int(record["duration_ns"]),
            first_issue_ns=int(record.get("first_issue_ns", 0)) or None,  # 0: nothing issued
        )

    @classmethod
    def from_json(cls, data: Any, where: str = TIMELINE_FILE) -> Timeline:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise HarnessError(f"{where} is not a harness timeline ({FORMAT})")
        try:
            bins, samples, latency = data["bins"], data["samples"], data["latency_ns"]
            buckets = data["histogram"]["buckets"]
            return cls(
                bin_width_ns=int(bins["width_ns"]),
                issued=_ints(bins["issued"]),
                completed=_ints(bins["completed"]),
                batches=_ints(bins["batches"]),
                latency_mean_ns=tuple(
                    None if m is None else float(m) for m in bins["latency_mean_ns"]
                ),
                latency_max_ns=_ints(bins["latency_max_ns"]),
                histogram=tuple(LatencyBucket(int(lo), int(w), int(n)) for lo, w, n in buckets),
                issued_samples=int(samples["issued"]),
                completed_samples=int(samples["completed"]),
                completed_batches=int(samples["batches"]),
                latency_min_ns=int(latency["min"]),
                latency_max_total_ns=int(latency["max"]),
                latency_mean_total_ns=float(latency["mean"]),
                duration_ns=int(data["duration_ns"]),
                first_issue_ns=_optional_int(data.get("first_issue_ns")),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{where} is malformed: {error!r}") from None


def _ints(values: Sequence[Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


@runtime_checkable
class RecordsTimeline(Protocol):
    """A batch source that records a timeline: the native FixedBatcher and DynamicBatcher. (Not
    imported from there: whoever only reads timelines, the report, needs no native module.)"""

    def timeline(self) -> dict[str, Any]: ...


def timeline_of(batch_source: object) -> Timeline | None:
    """What a batch source recorded; None for one that records nothing."""
    if isinstance(batch_source, RecordsTimeline):
        return Timeline.from_native(batch_source.timeline())
    return None


def write_timeline(log_dir: Path, batch_source: object) -> Path | None:
    """Write the batch source's timeline into the run's log directory (None: it records none)."""
    timeline = timeline_of(batch_source)
    if timeline is None:
        return None
    path = log_dir / TIMELINE_FILE
    write_json_atomic(path, timeline.to_json())
    return path


def read_timeline(path: Path) -> Timeline:
    return Timeline.from_json(read_json(path), str(path))
