"""`./pants run :submission -- --benchmarks resnet50 --submitter NAME ...`: every run a submission
needs, its audits, the staged and checked tree, the tarball, a summary and a report.

Flags this command does not know are passed to every run (e.g. `--backend onnxruntime --precision
int8 --scratch_path /data`), so a submission runs exactly as the run targets do."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.catalog import benchmark_names, load_benchmark
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.pipeline import SubmissionRequest, run_submission
from mlperf_harness.submission.rounds import (
    DEFAULT_ROUND,
    ROUND_NAMES,
    newest_round_listing,
    parse_round,
)
from mlperf_harness.submission.rules import DIVISIONS, STATUSES, SYSTEM_TYPES

DEFAULT_OUT = Path("build/submission")
DEFAULT_FULL_RESULTS = Path("build/full_results")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _submitter(text: str) -> str:
    if not _NAME.match(text):
        raise HarnessError(
            f"submitter {text!r} must be a directory name: letters, digits, '.', '_' or '-'"
        )
    return text


def _choice(allowed: Sequence[str], what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise HarnessError(f"{what} {text!r}: choose one of {', '.join(allowed)}")
        return text

    return parse


def _scenarios(text: str) -> tuple[Scenario, ...]:
    return tuple(Scenario.parse(part) for part in text.split(",") if part.strip())


def _benchmarks(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise HarnessError("--benchmarks names no benchmark")
    return names


def _newest_round(names: Sequence[str]) -> str:
    """The newest round listing every benchmark asked for (a name the catalog lacks is refused
    later, in one line, with the others)."""
    known = set(benchmark_names())
    models = [load_benchmark(name).submission_model for name in names if name in known]
    return newest_round_listing(*models)


def parse_request(argv: Sequence[str]) -> SubmissionRequest:
    parser = OneLineParser(
        prog="submission",
        description="Run, audit, stage, check and pack an MLPerf Inference submission (of "
        f"{DEFAULT_ROUND}, or an earlier round with --round). Other flags are passed to every run.",
    )
    add = parser.add_argument
    add(
        "--round",
        type=parse_round,
        default=None,
        help=f"the round: {', '.join(ROUND_NAMES)} (default: the newest whose checker lists every "
        f"benchmark asked for: {DEFAULT_ROUND}, or a retired benchmark's last round); its rules, "
        "layout, LoadGen seeds, audits and checker (submission/rounds/)",
    )
    add(
        "--benchmarks",
        type=_benchmarks,
        required=True,
        help=f"comma-separated: {', '.join(b for b in benchmark_names() if b != 'harness_overhead')}",
    )
    add(
        "--scenarios",
        type=_scenarios,
        help="comma-separated (default: those the system type requires)",
    )
    add("--submitter", type=_submitter, required=True, help="your organisation's name")
    add("--division", type=_choice(DIVISIONS, "division"), default="closed")
    add(
        "--system_type",
        type=_choice(SYSTEM_TYPES, "system type"),
        help="edge, datacenter or datacenter,edge (default: datacenter,edge when Server is "
        "asked for, else edge)",
    )
    add("--status", type=_choice(STATUSES, "status"), default="available")
    add(
        "--fast",
        action="store_true",
        help="cap every run's minimum duration at one minute (with --stage_runs: the runs were "
        "made so, and the check expects what short runs miss)",
    )
    add(
        "--stage_runs",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="run nothing: stage the newest complete set of earlier runs found under DIR "
        "(repeatable; audit runs not yet verified are verified now)",
    )
    add("--out_dir", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    add(
        "--full_results_dir",
        type=Path,
        default=DEFAULT_FULL_RESULTS,
        help=f"where the full accuracy logs are kept (default: {DEFAULT_FULL_RESULTS})",
    )
    add(
        "--system_description",
        type=Path,
        help="a JSON file of system-description fields (cooling, networking, ...) to set",
    )
    add(
        "--inference_src",
        type=Path,
        help="a checkout of mlcommons/inference: also run its submission checker on the tree, "
        "with the round's --version (v4.0: a checkout of the v4.0 tag)",
    )
    add(
        "--checker_python",
        help="the Python that runs MLCommons' checker (it needs PyYAML; default: this one)",
    )
    add(
        "--allow_invalid",
        action="store_true",
        help="stage INVALID performance runs, failed audits and accuracy below target (the tree "
        "is then no valid submission; stand-in runs imply it)",
    )
    args, run_args = parser.parse_known_args(list(argv))
    for arg in run_args:
        if arg.startswith(("--log_dir", "--scenario", "--test_mode", "--audit_test")):
            raise HarnessError(f"{arg.split('=')[0]} is chosen by the submission for each run")
    system_type = args.system_type
    if system_type is None:
        wants_server = args.scenarios is not None and Scenario.SERVER in args.scenarios
        system_type = "datacenter,edge" if wants_server else "edge"
    return SubmissionRequest(
        benchmarks=args.benchmarks,
        scenarios=args.scenarios,
        submitter=args.submitter,
        division=args.division,
        system_type=system_type,
        status=args.status,
        out_dir=args.out_dir,
        full_results_dir=args.full_results_dir,
        run_args=tuple(run_args),
        fast=args.fast,
        system_description=args.system_description,
        inference_src=args.inference_src,
        checker_python=args.checker_python,
        allow_invalid=args.allow_invalid,
        stage_runs=tuple(args.stage_runs),
        round=args.round or _newest_round(args.benchmarks),
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_entry_point(
        "submission", lambda: run_submission(parse_request(sys.argv[1:] if argv is None else argv))
    )


def entry() -> None:
    sys.exit(main())
