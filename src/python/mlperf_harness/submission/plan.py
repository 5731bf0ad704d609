"""The steps of one submission, decided before anything runs: for each benchmark and scenario an
accuracy run, a performance run, and each audit the benchmark needs (its run, then its verification);
then staging, truncation, the preflight check, packing and the report. Pure: no step runs here."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.loadgen.settings import Scenario, TestMode
from mlperf_harness.submission.rules import AuditTest


class StepKind(enum.Enum):
    ACCURACY = "accuracy run"
    PERFORMANCE = "performance run"
    AUDIT = "audit run"
    VERIFY = "audit verification"


@dataclass(frozen=True)
class RunStep:
    """One LoadGen run (or the verification of one audit) of one benchmark and scenario."""

    kind: StepKind
    benchmark: str
    scenario: Scenario
    out_dir: Path  # the run's log directory, or the verified TEST0x/ directory
    audit: AuditTest | None = None

    @property
    def step_id(self) -> str:
        """Unique within a submission; names the step's resume record."""
        parts = [self.benchmark, self.scenario.value, self.kind.name.lower()]
        if self.audit is not None:
            parts.append(self.audit.value)
        return "-".join(parts)

    @property
    def title(self) -> str:
        audit = f" {self.audit.value}" if self.audit is not None else ""
        return f"{self.benchmark} {self.scenario.value}{audit} {self.kind.value}"

    def run_arguments(self) -> list[str]:
        """The arguments that make this step's run (added to the user's own run flags)."""
        if self.kind is StepKind.VERIFY:
            raise ValueError("a verification is not a run")
        mode = (
            TestMode.ACCURACY_ONLY if self.kind is StepKind.ACCURACY else TestMode.PERFORMANCE_ONLY
        )
        argv = ["--scenario", self.scenario.value, "--test_mode", mode.value]
        if self.audit is not None:
            argv += ["--audit_test", self.audit.value]
        return argv


@dataclass(frozen=True)
class ScenarioSteps:
    benchmark: str
    scenario: Scenario
    accuracy: RunStep
    performance: RunStep
    audit_runs: dict[AuditTest, RunStep]
    verifications: dict[AuditTest, RunStep]

    def ordered(self) -> list[RunStep]:
        """The order a submission runs them: each verification after the runs it compares."""
        steps = [self.performance, self.accuracy]
        for test, run in self.audit_runs.items():
            steps += [run, self.verifications[test]]
        return steps


def scenario_steps(
    runs_root: Path, benchmark: str, scenario: Scenario, audits: Sequence[AuditTest]
) -> ScenarioSteps:
    """Directories: runs_root/<benchmark>/<scenario>/{performance, accuracy, TEST0x/run, TEST0x/verified}."""
    base = runs_root / benchmark / scenario.value

    def step(kind: StepKind, out_dir: Path, audit: AuditTest | None = None) -> RunStep:
        return RunStep(kind, benchmark, scenario, out_dir, audit)

    return ScenarioSteps(
        benchmark,
        scenario,
        accuracy=step(StepKind.ACCURACY, base / "accuracy"),
        performance=step(StepKind.PERFORMANCE, base / "performance"),
        audit_runs={test: step(StepKind.AUDIT, base / test.value / "run", test) for test in audits},
        verifications={
            test: step(StepKind.VERIFY, base / test.value / test.value, test) for test in audits
        },
    )
