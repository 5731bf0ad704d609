"""The preflight check of a staged submission tree (`:submission_check -- <tree> [--round v5.0]`):
our own reading of the round's rules (submission/rounds: v6.1 by default), one line per problem,
before MLCommons' checker for that round (optionally run too, from a checkout of
mlcommons/inference, with the round's --version) and reviewers see the tree.

Checked: the layout and the files each directory must (or must not) hold, the scenarios the system
type requires, the system description's fields, measurements.json, accuracy.txt against the model's
target, its hash and the accuracy logs' truncation, VALID performance runs, no LoadGen error in any
detail log, every audit present, an audit run and passed, and the round's seeds and settings.
Problems of the kinds every short stand-in run has are reported all the same, marked so that
`--allow_short_runs` (or a caller, through `Problem.short_run`) can let them pass.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.submission.audit_dirs import has_performance_run
from mlperf_harness.submission.preflight_accuracy import (
    check_accuracy_dir,
    check_accuracy_target,
    check_verification,
)
from mlperf_harness.submission.preflight_layout import (
    ScenarioDir,
    audits,
    load_system_json,
    walk_tree,
)
from mlperf_harness.submission.preflight_logs import check_accuracy_run, check_performance_run
from mlperf_harness.submission.preflight_mlcommons import (
    checker_problems,
    run_mlcommons_checker,
)
from mlperf_harness.submission.preflight_problem import SHORT_RUN_KINDS, Kind, Problem, Problems
from mlperf_harness.submission.preflight_system import check_measurements, check_system_json
from mlperf_harness.submission.rounds import DEFAULT_ROUND, ROUND_NAMES, get_round, parse_round
from mlperf_harness.submission.rules import AuditTest

__all__ = ["SHORT_RUN_KINDS", "Kind", "Problem", "check_tree", "main"]


def check_tree(
    tree: Path, *, full_logs: Path | None = None, round_name: str = DEFAULT_ROUND
) -> list[Problem]:
    """Every problem found in the staged tree (closed|open/<submitter>/...), in walk order, by the
    rules and layout of round `round_name`.

    `full_logs`: where truncation kept the whole accuracy logs, laid out as the tree is (MLCommons'
    backup layout); with it each truncated log is checked against its full log and hash.
    """
    problems = Problems(tree)
    scenario_dirs = walk_tree(tree, problems, get_round(round_name))
    _check_systems(tree, problems)
    for sdir in scenario_dirs:
        _check_scenario(sdir, problems, full_logs)
    return problems.found


def _check_systems(tree: Path, problems: Problems) -> None:
    for description in sorted(tree.glob("*/*/systems/*.json")):
        division, submitter = description.parts[-4], description.parts[-3]
        if division not in ("closed", "open"):
            continue
        system_json = load_system_json(description, problems)
        if system_json is not None:
            check_system_json(description, system_json, division, submitter, problems)


def _check_scenario(sdir: ScenarioDir, problems: Problems, full_logs: Path | None) -> None:
    measurements = sdir.measurements_json
    if measurements is not None and measurements.is_file():
        check_measurements(measurements, problems)
    check_performance_run(sdir, None, problems)
    check_accuracy_run(sdir, problems)
    check_accuracy_target(sdir, problems)
    check_accuracy_dir(sdir.path / "accuracy", problems, need_hash=sdir.closed, full_logs=full_logs)
    for test in audits(sdir.rules, sdir.division):
        if not sdir.audit_dir(test).is_dir():
            continue  # the layout check reports the missing audit
        if has_performance_run(test):  # TEST06 checks the responses of a run staged without logs
            check_performance_run(sdir, test, problems)
        check_verification(sdir, test, problems)
        if test is AuditTest.TEST01:
            check_accuracy_dir(
                sdir.audit_dir(test) / "accuracy", problems, need_hash=True, full_logs=full_logs
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Check a staged submission tree; exit 1 if any problem is found, 2 for a bad argument."""
    parser = OneLineParser(prog="submission_check", description=main.__doc__)
    parser.add_argument("tree", type=Path, help="the staged tree (holding closed/ or open/)")
    parser.add_argument(
        "--round",
        type=parse_round,
        default=DEFAULT_ROUND,
        help=f"the round the tree was staged for: {', '.join(ROUND_NAMES)} (default "
        f"{DEFAULT_ROUND}); its rules, its layout and its MLCommons checker",
    )
    parser.add_argument(
        "--inference_src",
        type=Path,
        help="a checkout of mlcommons/inference: also run its submission checker for the round "
        "(v4.0: a checkout of the v4.0 tag) and keep its log in the tree as "
        "<division>/<submitter>/submission_checker_log.txt",
    )
    parser.add_argument(
        "--checker_python",
        default=sys.executable,
        help="the interpreter for MLCommons' checker, which needs PyYAML (default: this one)",
    )
    parser.add_argument(
        "--full_logs",
        type=Path,
        help="the whole accuracy logs truncation kept, laid out as the tree: check hashes against them",
    )
    parser.add_argument(
        "--allow_short_runs",
        action="store_true",
        help="list, but do not fail on, what every short stand-in run has: "
        + ", ".join(sorted(kind.value for kind in SHORT_RUN_KINDS)),
    )

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        problems = check_tree(args.tree, full_logs=args.full_logs, round_name=args.round)
        if args.inference_src is not None:
            for checker_run in run_mlcommons_checker(
                args.tree, args.inference_src, python=args.checker_python, round_name=args.round
            ):
                found = checker_problems(checker_run)
                problems += found
                logs = ", ".join(path.as_posix() for path in checker_run.logs)
                print(
                    f"submission_check: MLCommons' checker on {checker_run.submitter}: exit "
                    f"{checker_run.returncode}, {len(checker_run.error_lines)} error line(s), log in {logs}",
                    file=sys.stderr,
                )
        return report(problems, allow_short_runs=args.allow_short_runs)

    return run_entry_point(parser.prog, run)


def report(problems: Sequence[Problem], *, allow_short_runs: bool) -> int:
    """Print one line per problem; the exit status: 1 if any counts, else 0."""
    counted = [
        p
        for p in problems
        if not (allow_short_runs and p.short_run) and p.kind is not Kind.CHECKER_DEFECT
    ]
    for problem in problems:
        allowed = " (allowed: short run)" if allow_short_runs and problem.short_run else ""
        if problem.kind is Kind.CHECKER_DEFECT:
            allowed = " (not counted: the checker's own defect)"
        print(problem.line() + allowed)
    short = sum(p.short_run for p in problems)
    if not problems:
        print("submission_check: no problems found", file=sys.stderr)
    else:
        print(
            f"submission_check: {len(problems)} problem(s), {short} of them inherent to short "
            f"stand-in runs{' (allowed)' if allow_short_runs else ''}",
            file=sys.stderr,
        )
    return 1 if counted else 0


if __name__ == "__main__":
    raise SystemExit(main())
