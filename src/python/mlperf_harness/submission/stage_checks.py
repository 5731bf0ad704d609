"""Why runs cannot be staged, one line each: a missing file, a run that is not what it is named
as or was made for another round, an INVALID performance run, an accuracy run below target, a
missing, failed or not yet runnable audit, a system description the checker would refuse."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import USER_CONF_FILE
from mlperf_harness.submission.audit_dirs import audit_failures, audit_missing
from mlperf_harness.submission.logged_run import (
    ACCURACY_FILES,
    PERFORMANCE_FILES,
    LoggedRun,
    read_run,
)
from mlperf_harness.submission.rounds import DEFAULT_ROUND, get_round, recorded_round
from mlperf_harness.submission.rounds.facts import NOT_YET, RUNNABLE_AUDITS, Round
from mlperf_harness.submission.rules import DIVISIONS
from mlperf_harness.submission.runs import ScenarioRuns
from mlperf_harness.submission.stage_texts import StagedScenario, accuracy_text, measurements
from mlperf_harness.submission.system_description import description_problems

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a directory name in the tree


def staging_problems(
    runs: Sequence[ScenarioRuns],
    *,
    division: str,
    submitter: str,
    system_descriptions: Mapping[str, Mapping[str, object]],
    allow_invalid: bool = False,
    round_name: str = DEFAULT_ROUND,
) -> list[str]:
    """One line per reason not to stage `runs` for round `round_name`; empty when they can be
    staged. `allow_invalid` lets INVALID performance runs, accuracy below target and failed audits
    through (the tree is then no valid submission), never missing files, audits, or runs made for
    another round."""
    table = get_round(round_name)
    problems: list[str] = []
    if division not in DIVISIONS:
        problems.append(f"division {division!r} is not one of {', '.join(DIVISIONS)}")
    if not SAFE_NAME.fullmatch(submitter):
        problems.append(f"submitter {submitter!r} must be letters, digits, '.', '_' or '-'")
    if not runs:
        problems.append("no runs to stage")
    seen: set[tuple[str, str, Scenario]] = set()
    for scenario_runs in runs:
        key = (scenario_runs.system, scenario_runs.model, scenario_runs.scenario)
        if key in seen:
            problems.append(f"{_name(scenario_runs)}: named twice")
        seen.add(key)
        problems += scenario_problems(
            scenario_runs, division=division, allow_invalid=allow_invalid, round_name=table.name
        )
    for system in sorted({scenario_runs.system for scenario_runs in runs}):
        if not SAFE_NAME.fullmatch(system):
            problems.append(f"system name {system!r} must be letters, digits, '.', '_' or '-'")
        description = system_descriptions.get(system)
        if description is None:
            problems.append(f"no system description for {system}")
            continue
        problems += [
            f"systems/{system}.json: {problem}"
            for problem in description_problems(description, division=division, submitter=submitter)
        ]
        system_type = description.get("system_type")
        if isinstance(system_type, str):
            for scenario_runs in runs:
                if scenario_runs.system == system:
                    problems += _system_type_problems(scenario_runs, system_type, table)
    return problems


def scenario_problems(
    runs: ScenarioRuns,
    *,
    division: str = "closed",
    allow_invalid: bool = False,
    round_name: str = DEFAULT_ROUND,
) -> list[str]:
    """Why these runs cannot be staged for round `round_name`: one line each, naming the run
    directory."""
    name = _name(runs)
    table = get_round(round_name)
    if runs.model not in table.models:
        known = ", ".join(table.models)
        return [f"{name}: no {table.name} rules for model {runs.model!r} ({known})"]
    rules = table.models[runs.model]
    other_round = round_problem(runs, table)
    if other_round is not None:
        return [other_round]
    problems: list[str] = []
    verdicts: list[str] = []  # what allow_invalid lets through
    performance = _checked_run(runs, runs.performance_dir, "performance", problems)
    accuracy = _checked_run(runs, runs.accuracy_dir, "accuracy", problems)
    if performance is not None:
        if not performance.is_performance:
            audit = f", audit {performance.audit}" if performance.audit else ""
            problems.append(
                f"{name}: {performance.path} is not a performance run"
                f" (test mode {performance.mode}{audit})"
            )
        elif not performance.valid:
            reasons = "; ".join(performance.record.get("invalid_reasons") or []) or "no verdict"
            verdicts.append(f"{name}: performance run {performance.path} is INVALID ({reasons})")
        problems += _missing(name, runs.performance_dir, (*PERFORMANCE_FILES, USER_CONF_FILE))
    if accuracy is not None:
        if not accuracy.is_accuracy:
            problems.append(f"{name}: {accuracy.path} is not an accuracy run ({accuracy.mode})")
        elif accuracy.accuracy is None:
            problems.append(f"{name}: accuracy run {accuracy.path} records no accuracy")
        elif not accuracy.accuracy_passed and division == "closed":
            verdicts.append(
                f"{name}: accuracy run {accuracy.path} is below target"
                f" ({accuracy_text(accuracy.accuracy)})"
            )
        problems += _missing(name, runs.accuracy_dir, ACCURACY_FILES)
    if performance is not None and accuracy is not None:
        if performance.signature != accuracy.signature:
            problems.append(
                f"{name}: the accuracy run {accuracy.path} measured another backend, precision"
                f" or model than the performance run ({accuracy.describe_signature()} vs"
                f" {performance.describe_signature()})"
            )
        try:
            measurements(StagedScenario(runs, performance, accuracy, performance.engine_spec()))
        except HarnessError as error:
            problems.append(f"{name}: {error}")
    for test in rules.audits:
        if test not in RUNNABLE_AUDITS:
            problems.append(
                f"{name}: {table.name} needs {test.value}, which this harness does not run yet"
                f" ({NOT_YET.get(test, 'no implementation')})"
            )
        elif test not in runs.audit_dirs:
            problems.append(f"{name}: {test.value} is missing (no verified audit given)")
    for test in sorted(set(runs.audit_dirs) - set(rules.audits), key=lambda t: t.value):
        problems.append(f"{name}: {table.name} has no {test.value} for {runs.model}")
    for test, audit_dir in sorted(runs.audit_dirs.items(), key=lambda item: item[0].value):
        missing = audit_missing(test, audit_dir)
        problems += [f"{name}: {problem}" for problem in missing]
        if not missing:
            verdicts += [
                f"{name}: {failure}" for failure in audit_failures(test, audit_dir, runs.model)
            ]
    return problems + ([] if allow_invalid else verdicts)


def _checked_run(
    runs: ScenarioRuns, path: Path, role: str, problems: list[str]
) -> LoggedRun | None:
    name = _name(runs)
    try:
        run = read_run(path)
    except HarnessError as error:
        problems.append(f"{name}: {role} run: {error}")
        return None
    expected = {
        "system_name": runs.system,
        "benchmark": runs.benchmark,
        "scenario": runs.scenario.value,
    }
    for key, value in expected.items():
        if run.record.get(key) != value:
            problems.append(f"{name}: {role} run {path} has {key} {run.record.get(key)!r}")
    return run


def round_problem(runs: ScenarioRuns, table: Round) -> str | None:
    """One line where any run of the set was made for another round than the one staged."""
    others: dict[str, list[str]] = {}
    for path in (runs.performance_dir, runs.accuracy_dir):
        try:
            made_for = recorded_round(read_run(path).record)
        except HarnessError:
            continue  # said elsewhere
        if made_for != table.name:
            others.setdefault(made_for, []).append(str(path))
    if not others:
        return None
    found = "; ".join(f"{', '.join(paths)} for {made}" for made, paths in sorted(others.items()))
    return (
        f"{_name(runs)}: runs made for another round than {table.name} ({found}): run them"
        f" with --round {table.name}"
    )


def _system_type_problems(runs: ScenarioRuns, system_type: str, table: Round) -> list[str]:
    if runs.model not in table.models:
        return []  # said per scenario
    try:
        allowed = table.models[runs.model].allowed_scenarios(system_type)
    except HarnessError as error:
        return [f"{_name(runs)}: {error}"]
    if runs.scenario not in allowed:
        names = ", ".join(scenario.value for scenario in allowed)
        return [
            f"{_name(runs)}: a {system_type!r} system submits {runs.model} in {names},"
            f" not {runs.scenario.value}"
        ]
    return []


def _missing(name: str, directory: Path, files: Iterable[str]) -> list[str]:
    return [
        f"{name}: {directory} lacks {file}" for file in files if not (directory / file).is_file()
    ]


def _name(runs: ScenarioRuns) -> str:
    return f"{runs.model} {runs.scenario.value} on {runs.system}"
