"""Run MLCommons' own submission checker for the tree's round from a checkout of
mlcommons/inference on a staged tree, keep its log in the tree
(`<division>/<submitter>/submission_checker_log.txt`, as NVIDIA's guide asks) and turn each error
it logged into a problem of the preflight's kinds.

Which checker and which `--version` are the round's (rounds/: Round.checker): the current one,
tools/submission/submission_checker/main.py, holds v5.0 to v6.1 and runs with an interpreter that
has PyYAML (its loader imports `yaml`); v4.0's is the single script
tools/submission/submission_checker.py of a checkout of the `v4.0` tag (with log_parser.py beside
it; the standard library covers the rest). Nothing of either is copied into this project.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.preflight_problem import Kind, Problem
from mlperf_harness.submission.rounds import DEFAULT_ROUND, get_round
from mlperf_harness.submission.rounds.facts import Checker
from mlperf_harness.submission.rules import DIVISIONS

CHECKER_LOG = "submission_checker_log.txt"
# What the checker imports beyond the standard library, where its round's table says it needs
# anything (tests replace it to run a stand-in checker).
CHECKER_MODULES = ("yaml",)
_TIMEOUT_S = 1800
# "[time file.py:123 ERROR] message" (the loader's logging format) or logging's default format.
_ERROR_LINE = re.compile(r"^(?:\[[^\]]*\bERROR\]|ERROR:[\w.]+:)\s?(?P<message>.*)$")
# Errors every short stand-in run has, by the checker's own wording.
_SHORT_RUN_ERRORS = (
    (re.compile(r"Test duration less than 600s"), Kind.MIN_DURATION),
    (re.compile(r"Required minimum samples per query not met"), Kind.OFFLINE_SAMPLES_PER_QUERY),
    (
        re.compile(
            r"Early stopping condition was not met|Not enough samples were processed for early stopping"
        ),
        Kind.EARLY_STOPPING,
    ),
    (re.compile(r"does not cover all dataset"), Kind.DATASET_SIZE),
    (re.compile(r"performance_sample_count, found \d+, needs to be >="), Kind.DATASET_SIZE),
    (re.compile(r"Compliance test performance check in .* failed"), Kind.AUDIT_PERFORMANCE),
)
# Errors of another kind than a short run's, by the checker's wording: an accuracy run below the
# official target (v4.0's "<dir>, accuracy not valid"), which a stand-in, judged against its own
# accuracy, is expected to log (submission/pipeline.py).
_OTHER_KINDS = ((re.compile(r"\baccuracy not valid$"), Kind.ACCURACY),)
# Lines that only repeat an error already logged (a check's or the run's summary). v4.0's script
# says "<run> has issues" and "compliance dir <dir> has issues" after each failed check (and after
# an INVALID run, which it does not name: our own check does), and counts a scenario whose run has
# issues as missing from the required ones, printed as a set (our own check names a scenario
# really missing; the current checker prints a list, and only for scenarios really missing).
_CONSEQUENCES = re.compile(
    r"^(Some .* [Cc]hecks failed for|NoResults |SUMMARY: submission has errors"
    r"|\S+ has issues$|compliance dir \S+ has issues$"
    r"|\S+ does not have all required scenarios, missing \{)"
)


@dataclass(frozen=True)
class CheckerRun:
    submitter: str
    returncode: int
    output: str  # stdout and stderr together, as kept in the log
    logs: tuple[Path, ...]  # where the log was kept, relative to the tree
    round_name: str = DEFAULT_ROUND  # whose checker ran (its known defects: Round.checker_defects)

    @property
    def error_lines(self) -> list[str]:
        return [m["message"] for line in self.output.splitlines() if (m := _ERROR_LINE.match(line))]


def checker_script(inference_src: Path, checker: Checker | None = None) -> Path:
    checker = checker or get_round(DEFAULT_ROUND).checker
    script = inference_src / checker.script
    if not script.is_file():
        raise HarnessError(
            f"no MLCommons submission checker at {script}: give --inference_src a checkout of "
            f"mlcommons/inference that holds {checker.describe()}"
        )
    return script


def check_interpreter(python: str, checker: Checker | None = None) -> None:
    """Say what the checker lacks in one line, before running it into a traceback."""
    needed = CHECKER_MODULES if checker is None or checker.modules else ()
    if not needed:
        return
    imports = "; ".join(f"import {name}" for name in needed)
    result = subprocess.run([python, "-c", imports], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        wanted = ", ".join(needed)
        raise HarnessError(
            f"MLCommons' checker needs the Python module(s) {wanted} in {python}: install PyYAML "
            "there (pip install pyyaml) or name another interpreter with --checker_python"
        )


def submitters(tree: Path) -> dict[str, list[Path]]:
    """Each submitter's name and its directories (one per division it submits in)."""
    found: dict[str, list[Path]] = {}
    for division in DIVISIONS:
        division_dir = tree / division
        if division_dir.is_dir():
            for entry in sorted(division_dir.iterdir()):
                if entry.is_dir():
                    found.setdefault(entry.name, []).append(entry)
    return found


def run_mlcommons_checker(
    tree: Path,
    inference_src: Path,
    *,
    python: str = sys.executable,
    round_name: str = DEFAULT_ROUND,
) -> list[CheckerRun]:
    """Run the round's checker once per submitter, with the round's --version, and keep its log
    in each of that submitter's directories."""
    checker = get_round(round_name).checker
    script = checker_script(inference_src, checker)
    check_interpreter(python, checker)
    version = checker.version
    runs: list[CheckerRun] = []
    for name, directories in submitters(tree).items():
        # Its CSV summary and anything else it writes go to a scratch directory, not into the tree.
        with tempfile.TemporaryDirectory(prefix="mlperf-checker-") as scratch:
            command = [
                python,
                str(script.resolve()),
                "--input",
                str(tree.resolve()),
                "--version",
                version,
                "--submitter",
                name,
                "--csv",
                str(Path(scratch) / "summary.csv"),
            ]
            try:
                result = subprocess.run(
                    command,
                    cwd=scratch,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    errors="replace",
                    timeout=_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise HarnessError(
                    f"MLCommons' checker ran over {_TIMEOUT_S} s on {tree}"
                ) from None
        logs = []
        for directory in directories:
            write_bytes_atomic(directory / CHECKER_LOG, result.stdout.encode())
            logs.append((directory / CHECKER_LOG).relative_to(tree))
        runs.append(CheckerRun(name, result.returncode, result.stdout, tuple(logs), round_name))
    return runs


def checker_problems(run: CheckerRun) -> list[Problem]:
    """Each error the checker logged, of the kind it is; its summary lines repeat them."""
    log = run.logs[0] if run.logs else Path(CHECKER_LOG)
    defects = get_round(run.round_name).checker_defects
    problems: list[Problem] = []
    for message in run.error_lines:
        if _CONSEQUENCES.match(message):
            continue
        defect = next((d for d in defects if re.search(d.pattern, message)), None)
        if defect is not None:
            text = f"MLCommons' checker: {message} (a defect of that checker: {defect.why})"
            problems.append(Problem(log, text, Kind.CHECKER_DEFECT))
            continue
        kind = next(
            (
                kind
                for pattern, kind in (*_SHORT_RUN_ERRORS, *_OTHER_KINDS)
                if pattern.search(message)
            ),
            Kind.MLCOMMONS,
        )
        problems.append(Problem(log, f"MLCommons' checker: {message}", kind))
    if run.returncode != 0 and not problems:
        last = next(
            (line for line in reversed(run.output.splitlines()) if line.strip()), "no output"
        )
        problems.append(
            Problem(
                log,
                f"MLCommons' checker exited {run.returncode} without an error line: {last}",
                Kind.MLCOMMONS,
            )
        )
    return problems
