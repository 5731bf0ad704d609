"""The submission's progress: which step of how many, and about how long is left.

The estimate comes from the configured durations (a performance run lasts at least its minimum
duration) and, once steps of a kind have finished, from how long they took."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from mlperf_harness.submission.plan import StepKind


def format_duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class ProgressLine:
    total: int
    done: int = 0
    measured: dict[StepKind, float] = field(default_factory=dict)  # last wall time per kind

    def estimate(self, kind: StepKind, configured_s: float | None) -> float | None:
        return self.measured.get(kind, configured_s)

    def start(self, title: str, estimate_s: float | None, left_s: float | None) -> None:
        self.done += 1
        about = f" (about {format_duration(estimate_s)})" if estimate_s else ""
        left = f"; about {format_duration(left_s)} left in all" if left_s else ""
        print(f"[{self.done}/{self.total}] {title}{about}{left}", file=sys.stderr, flush=True)

    def finished(self, kind: StepKind, wall_s: float) -> None:
        self.measured[kind] = wall_s

    def skipped(self, title: str) -> None:
        self.done += 1
        print(f"[{self.done}/{self.total}] {title}: done before, inputs unchanged", file=sys.stderr)
