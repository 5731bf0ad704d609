"""What the preflight check reports: one problem, the path it is about, and its kind.

The kind lets a caller tell problems that every short stand-in run has (the round's 600 s minimum
duration, Offline's 24,576 samples per query, early stopping, the accuracy run's dataset size, and
audit performance comparisons of short CPU runs) from those a submission must never have.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path


class Kind(enum.Enum):
    LAYOUT = "layout"  # a missing, misplaced, empty or forbidden file or directory
    SCENARIOS = "scenarios"  # the scenarios present do not match the system type
    SYSTEM = "system"  # systems/<system>.json
    MEASUREMENTS = "measurements"  # measurements.json
    ACCURACY = "accuracy"  # accuracy.txt's metric against the model's target
    TRUNCATION = "truncation"  # an accuracy log not truncated as MLCommons does, or its hash
    VALIDITY = "validity"  # a performance run LoadGen judged INVALID
    LOADGEN_ERROR = "loadgen_error"  # an error LoadGen logged in a detail log
    SETTINGS = "settings"  # seeds, test mode, sample counts: the round's settings
    # Server's latency bound other than the round's (a stand-in's run widens it where the machine
    # cannot meet it: config/measured_rates.py).
    LATENCY_BOUND = "latency_bound"
    AUDIT = "audit"  # a compliance audit missing, not an audit run, or failing its accuracy check
    MLCOMMONS = "mlcommons"  # an error of MLCommons' own checker that none of the kinds above names
    # An error MLCommons' checker logs from a defect of its own, whatever the tree holds, as the
    # round's table names it (Round.checker_defects): reported, never counted against the tree.
    CHECKER_DEFECT = "checker_defect"
    # Inherent to a short stand-in run: reported all the same, as MLCommons' checker reports them.
    MIN_DURATION = "min_duration"
    OFFLINE_SAMPLES_PER_QUERY = "offline_samples_per_query"
    EARLY_STOPPING = "early_stopping"
    DATASET_SIZE = "dataset_size"
    AUDIT_PERFORMANCE = "audit_performance"

    @property
    def short_run(self) -> bool:
        """Whether every short stand-in run has this problem (so `--allow_short_runs` allows it)."""
        return self in SHORT_RUN_KINDS


SHORT_RUN_KINDS = frozenset(
    {
        Kind.MIN_DURATION,
        Kind.OFFLINE_SAMPLES_PER_QUERY,
        Kind.EARLY_STOPPING,
        Kind.DATASET_SIZE,
        Kind.AUDIT_PERFORMANCE,
    }
)


@dataclass(frozen=True)
class Problem:
    path: Path  # relative to the checked tree ("." for the tree itself)
    message: str
    kind: Kind

    @property
    def short_run(self) -> bool:
        return self.kind.short_run

    def line(self) -> str:
        """One line, whatever the message holds (LoadGen's messages may span several)."""
        message = " ".join(self.message.split())
        return f"{self.path.as_posix()}: {message} [{self.kind.value}]"

    def __str__(self) -> str:
        return self.line()


class Problems:
    """Collects problems with paths made relative to the tree being checked."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.found: list[Problem] = []

    def add(self, path: Path, message: str, kind: Kind) -> None:
        try:
            relative = path.relative_to(self.tree)
        except ValueError:
            relative = path
        self.found.append(Problem(relative, message, kind))
