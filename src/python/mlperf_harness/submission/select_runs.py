"""Which runs to stage when the caller names none: per (system, model, scenario), the newest
complete set in a directory of run logs.

Only runs made for the submission's round count (result.json's "round"; runs from before rounds
were recorded were made for v6.1). A complete set is a VALID performance run, a passing accuracy run of the same backend, precision
and model, and each audit the model needs, verified and passing after the runs it compares (the
performance run; for TEST01 the accuracy run too): an audit verified before a newer performance run
says nothing about it. Runs are the directories holding a result.json; "newest" is by when
result.json, or the verification's verify_performance.txt (TEST06: verify_accuracy.txt), was
written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import RESULT_FILE
from mlperf_harness.submission.audit_dirs import (
    VERIFY_ACCURACY,
    VERIFY_PERFORMANCE,
    audit_failures,
    audit_missing,
    has_performance_run,
)
from mlperf_harness.submission.logged_run import LoggedRun, read_run
from mlperf_harness.submission.rounds import DEFAULT_ROUND, get_round, recorded_round
from mlperf_harness.submission.rounds.facts import RUNNABLE_AUDITS, Round
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.runs import ScenarioRuns

# Where an audit run's verified TEST0x/ directory is, given the audit run's log directory.
VerificationDir = Callable[[Path, AuditTest], Path]
# Verifies an audit run against the performance and accuracy runs it is compared with, for a set
# that has no fresh verification yet; returns the TEST0x/ directory it wrote.
Verify = Callable[[AuditTest, LoggedRun, LoggedRun, LoggedRun], Path]


def beside_audit_run(audit_run: Path, test: AuditTest) -> Path:
    """The submission pipeline's layout (plan.scenario_steps): <scenario>/TEST0x/run is the audit
    run, <scenario>/TEST0x/TEST0x its verification."""
    return audit_run.parent / test.value


@dataclass(frozen=True)
class RunSelection:
    runs: tuple[ScenarioRuns, ...]  # the newest complete set per (system, model, scenario)
    incomplete: tuple[str, ...]  # one line per (system, model, scenario) with runs but no set


def newest_complete_runs(
    log_root: Path,
    *,
    models: Mapping[str, str] | None = None,
    verification_dir: VerificationDir = beside_audit_run,
    verify: Verify | None = None,
    allow_invalid: bool = False,
    round_name: str = DEFAULT_ROUND,
) -> RunSelection:
    """The newest complete set per (system, model, scenario) of the runs under `log_root`.
    `models` maps benchmark names to submission model names (default: the benchmarks named as a
    model of the round); runs of other benchmarks are ignored. With `verify`, an audit run with no
    fresh passing verification is verified now instead of being passed over. Where no set is
    complete, `allow_invalid` (which stand-in runs imply, as in staging) takes the newest set of
    INVALID runs, accuracy below target or failed audits instead. Runs made for another round
    than `round_name` are left out, and a (system, model, scenario) that has only such runs says
    so among the incomplete."""
    table = get_round(round_name)
    models = models if models is not None else {model: model for model in table.models}
    groups: dict[tuple[str, str, str], list[LoggedRun]] = {}
    other_rounds: dict[tuple[str, str, str], set[str]] = {}
    for result in sorted(log_root.rglob(RESULT_FILE)):
        try:
            run = read_run(result.parent)
        except HarnessError:
            continue  # not ours, or being written
        benchmark = run.record.get("benchmark")
        if benchmark not in models:
            continue
        # A run records its submission model (--config_ver: bert-99 or bert-99.9): one of the
        # other model is no run of this submission. Older runs record none: the default one.
        recorded = run.record.get("submission_model")
        if recorded is not None and recorded != models[str(benchmark)]:
            continue
        system, scenario = run.record.get("system_name"), run.record.get("scenario")
        key = (str(system), str(benchmark), str(scenario))
        made_for = recorded_round(run.record)
        if made_for != table.name:
            other_rounds.setdefault(key, set()).add(made_for)
            continue
        groups.setdefault(key, []).append(run)
    chosen: list[ScenarioRuns] = []
    incomplete: list[str] = []
    for key, rounds in sorted(other_rounds.items()):
        if key not in groups:
            system, benchmark, scenario_name = key
            incomplete.append(
                f"{models[benchmark]} {scenario_name} on {system}: runs made for"
                f" {', '.join(sorted(rounds))} only, not {table.name} (run them with --round"
                f" {table.name})"
            )
    for (system, benchmark, scenario_name), group in sorted(groups.items()):
        try:
            scenario = Scenario.parse(scenario_name)
        except HarnessError:
            continue
        model = models[benchmark]
        found, missing = _newest_set(group, model, verification_dir, verify, table, lenient=False)
        if found is None and (allow_invalid or any(run.record.get("stand_in") for run in group)):
            found, _ = _newest_set(group, model, verification_dir, verify, table, lenient=True)
        if found is None:
            incomplete.append(f"{model} {scenario.value} on {system}: {missing}")
            continue
        performance, accuracy, audits = found
        chosen.append(
            ScenarioRuns(system, model, benchmark, scenario, performance, accuracy, audits)
        )
    return RunSelection(tuple(chosen), tuple(incomplete))


def _newest_set(
    group: list[LoggedRun],
    model: str,
    locate: VerificationDir,
    verify: Verify | None,
    table: Round,
    *,
    lenient: bool,
) -> tuple[tuple[Path, Path, dict[AuditTest, Path]] | None, str]:
    """`lenient`: any finished run and any complete verification will do, passed or not."""
    newest_first = sorted(group, key=lambda run: (run.finished, str(run.path)), reverse=True)
    performances = [run for run in newest_first if run.is_performance and (lenient or run.valid)]
    if not performances:
        return None, "no VALID performance run"
    accuracies = [
        run for run in newest_first if run.is_accuracy and (lenient or run.accuracy_passed)
    ]
    audit_runs = [run for run in newest_first if run.audit]
    missing = ""
    for performance in performances:
        matching = [run for run in accuracies if run.signature == performance.signature]
        if not matching:
            missing = missing or f"no passing accuracy run like performance run {performance.path}"
        for accuracy in matching:
            audits, lacking = _verified_audits(
                model, performance, accuracy, audit_runs, locate, verify, table, lenient=lenient
            )
            if audits is not None:
                return (performance.path, accuracy.path, audits), ""
            missing = missing or lacking
    return None, missing


def _verified_audits(
    model: str,
    performance: LoggedRun,
    accuracy: LoggedRun,
    audit_runs: list[LoggedRun],
    locate: VerificationDir,
    verify: Verify | None,
    table: Round,
    *,
    lenient: bool,
) -> tuple[dict[AuditTest, Path] | None, str]:
    """The newest passing verification of each audit the model needs in the round, made after
    the runs it compares; or None and what is lacking."""
    audits: dict[AuditTest, Path] = {}
    for test in table.model(model).audits:
        if test not in RUNNABLE_AUDITS:
            return None, f"{table.name} needs {test.value}, which this harness does not run yet"
        compared = [performance, accuracy] if test is AuditTest.TEST01 else [performance]
        after = max(run.finished for run in compared)
        for run in audit_runs:
            if run.audit != test.value or run.signature != performance.signature:
                continue
            verified = locate(run.path, test)
            if verify is not None and not _complete_after(verified, test, after):
                verified = verify(test, run, performance, accuracy)
            if _complete_after(verified, test, after) and (
                lenient or not audit_failures(test, verified, model)
            ):
                audits[test] = verified
                break
        else:
            runs_text = " and ".join(f"{run.mode} run {run.path}" for run in compared)
            return None, f"no passing {test.value} verified after the {runs_text}"
    return audits, ""


def _complete_after(verified: Path, test: AuditTest, after: float) -> bool:
    """A complete verification, written after `after` (the compared runs' end)."""
    verdict = verified / (VERIFY_PERFORMANCE if has_performance_run(test) else VERIFY_ACCURACY)
    return (
        verdict.is_file() and verdict.stat().st_mtime >= after and not audit_missing(test, verified)
    )
