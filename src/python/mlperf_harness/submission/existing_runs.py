"""`--stage_runs DIR`: a submission from runs made earlier (by the run targets, or by an earlier
submission) instead of new ones. Per (system, model, scenario) the newest complete set under the
directories named is staged (select_runs.py says what complete means); an audit run that was never
verified against the runs it goes with is verified now, into the submission's own directory."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import RESULT_FILE
from mlperf_harness.submission.audit_dirs import VERIFY_PERFORMANCE
from mlperf_harness.submission.benchmark_audit import submission_model, verify_benchmark_audit
from mlperf_harness.submission.logged_run import LoggedRun
from mlperf_harness.submission.rounds import DEFAULT_ROUND
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.runs import ScenarioRuns
from mlperf_harness.submission.select_runs import Verify, beside_audit_run, newest_complete_runs

VERIFICATIONS_DIR = "verifications"  # in the submission's out_dir: the audits verified here


def select_existing_runs(
    roots: Sequence[Path],
    wanted: Mapping[Benchmark, Sequence[Scenario]],
    run_args: Sequence[str],
    out_dir: Path,
    *,
    allow_invalid: bool,
    round_name: str = DEFAULT_ROUND,
) -> tuple[str, list[ScenarioRuns]]:
    """(the system's name, one complete set per benchmark and scenario `wanted`) from the runs
    under `roots`; a one-line HarnessError naming what is missing otherwise. `run_args`: the flags
    the runs were made with (where the data is), for TEST01's rescoring; `round_name`: the round
    whose runs count (the others are left out, and said so where nothing else was found)."""
    for root in roots:
        if not root.is_dir():
            raise HarnessError(f"--stage_runs {root}: no such directory")
    store = out_dir / VERIFICATIONS_DIR
    by_name = {benchmark.name: benchmark for benchmark in wanted}
    scenarios_of = {benchmark.name: scenarios for benchmark, scenarios in wanted.items()}
    models = {
        name: str(submission_model(benchmark, run_args)) for name, benchmark in by_name.items()
    }
    chosen: dict[tuple[str, str, Scenario], ScenarioRuns] = {}
    incomplete: list[str] = []

    def locate(audit_run: Path, test: AuditTest) -> Path:
        # A submission's runs directory keeps each verification beside its audit run.
        beside = beside_audit_run(audit_run, test)
        if (beside / VERIFY_PERFORMANCE).is_file():
            return beside
        return _stored(store, audit_run, test)

    for root in roots:
        selection = newest_complete_runs(
            root,
            models=models,
            verification_dir=locate,
            verify=_verifier(by_name, run_args, store, round_name),
            allow_invalid=allow_invalid,
            round_name=round_name,
        )
        incomplete += selection.incomplete
        for runs in selection.runs:
            key = (runs.system, runs.benchmark, runs.scenario)
            if runs.scenario in scenarios_of[runs.benchmark] and _newer(runs, chosen.get(key)):
                chosen[key] = runs
    systems = sorted({system for system, _benchmark, _scenario in chosen})
    if len(systems) > 1:
        raise HarnessError(
            f"--stage_runs found runs of several systems ({', '.join(systems)}): name the"
            " directories of one system (or use --system_name when running)"
        )
    missing = [
        f"{benchmark} {scenario.value}"
        for benchmark, scenarios in scenarios_of.items()
        for scenario in scenarios
        if not any(key[1:] == (benchmark, scenario) for key in chosen)
    ]
    if missing:
        for line in incomplete:
            print(f"submission: incomplete: {line}", file=sys.stderr)
        raise HarnessError(
            f"--stage_runs: no complete set of runs for {', '.join(missing)} under"
            f" {', '.join(str(root) for root in roots)}"
            + (" (what each lacks is listed above)" if incomplete else "")
        )
    ordered = sorted(chosen.values(), key=lambda runs: (runs.benchmark, runs.scenario.value))
    return systems[0], ordered


def _newer(runs: ScenarioRuns, other: ScenarioRuns | None) -> bool:
    """Of two complete sets found under different roots, the one with the newer performance run."""
    return other is None or _finished(runs.performance_dir) > _finished(other.performance_dir)


def _finished(run_dir: Path) -> float:
    return (run_dir / RESULT_FILE).stat().st_mtime


def _stored(store: Path, audit_run: Path, test: AuditTest) -> Path:
    """Where an audit run verified here is kept: one directory per audit run."""
    key = hashlib.sha256(str(audit_run.resolve()).encode()).hexdigest()[:16]
    return store / f"{audit_run.name}-{key}" / test.value


def _verifier(
    benchmarks: dict[str, Benchmark], run_args: Sequence[str], store: Path, round_name: str
) -> Verify:
    def verify(
        test: AuditTest, audit: LoggedRun, performance: LoggedRun, accuracy: LoggedRun
    ) -> Path:
        benchmark = benchmarks[str(audit.record.get("benchmark"))]
        out_dir = _stored(store, audit.path, test)
        print(f"submission: verifying {test.value} of {audit.path}", file=sys.stderr)
        scenario = str(accuracy.record.get("scenario"))
        options = benchmark.parse_options(
            [
                *run_args,
                "--scenario",
                scenario,
                "--test_mode",
                "AccuracyOnly",
                "--round",
                round_name,
            ]
        )
        verdict = verify_benchmark_audit(
            benchmark,
            options,
            test,
            audit_run=audit.path,
            performance_run=performance.path,
            accuracy_run=accuracy.path,
            out_dir=out_dir,
        )
        result = "PASS" if verdict.passed else "FAIL: " + "; ".join(verdict.reasons)
        print(f"    {test.value} {result}", file=sys.stderr)
        return out_dir

    return verify
