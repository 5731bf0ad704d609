"""`./pants run :run -- --benchmarks resnet50,bert --scenarios offline,server [run flags]`: every
benchmark in every scenario, one after another (as NVIDIA's RUN_ARGS), each run in a process of its
own; flags this command does not know go to every run. A failed run is reported and the others go
on; the exit status is 0 only if every run finished (VALID or not: the table says which)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.benchmarks.catalog import benchmark_names, load_benchmark
from mlperf_harness.cli.child_run import run_in_child
from mlperf_harness.cli.log_dirs import DEFAULT_LOG_ROOT, create_default_log_dir
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import result_record


@dataclass(frozen=True)
class RunRequest:
    benchmarks: tuple[str, ...]
    scenarios: tuple[Scenario, ...]
    run_args: tuple[str, ...]
    log_root: Path = DEFAULT_LOG_ROOT


def parse_request(argv: Sequence[str]) -> RunRequest:
    parser = OneLineParser(
        prog="run",
        description="Run every benchmark named in every scenario named. Other flags are passed "
        "to every run.",
    )
    parser.add_argument(
        "--benchmarks", required=True, help=f"comma-separated: {', '.join(benchmark_names())}"
    )
    parser.add_argument(
        "--scenarios", default="Offline", help="comma-separated, any case (default: Offline)"
    )
    parser.add_argument(
        "--log_root",
        type=Path,
        default=DEFAULT_LOG_ROOT,
        help=f"each run logs to <log_root>/<time>/<benchmark>/<scenario> (default: {DEFAULT_LOG_ROOT})",
    )
    args, run_args = parser.parse_known_args(list(argv))
    benchmarks = tuple(name.strip() for name in args.benchmarks.split(",") if name.strip())
    for name in benchmarks:
        load_benchmark(name)  # an unknown name is one line before anything runs
    scenarios = tuple(Scenario.parse(part) for part in args.scenarios.split(",") if part.strip())
    if not benchmarks or not scenarios:
        raise HarnessError("--benchmarks and --scenarios must each name at least one")
    for arg in run_args:
        if arg.split("=")[0] in ("--scenario", "--log_dir"):
            raise HarnessError(f"{arg.split('=')[0]} is chosen by :run for each run")
    return RunRequest(benchmarks, scenarios, tuple(run_args), args.log_root)


def run_all(request: RunRequest) -> int:
    rows: list[tuple[str, str, str]] = []
    for benchmark in request.benchmarks:
        for scenario in request.scenarios:
            title = f"{benchmark} {scenario.value}"
            log_dir = create_default_log_dir(Path(benchmark) / scenario.value, request.log_root)
            print(f"run: {title} -> {log_dir}", file=sys.stderr, flush=True)
            argv = [*request.run_args, "--scenario", scenario.value, "--log_dir", str(log_dir)]
            try:
                run_in_child(benchmark, argv, title)
            except HarnessError as error:
                rows.append((title, "failed", str(error)))
                continue
            rows.append((title, *_outcome(log_dir)))
    width = max(len(title) for title, _verdict, _detail in rows)
    print(f"{'run'.ljust(width)}  result   detail")
    for title, verdict, detail in rows:
        print(f"{title.ljust(width)}  {verdict.ljust(7)}  {detail}")
    return 1 if any(verdict == "failed" for _title, verdict, _detail in rows) else 0


def _outcome(log_dir: Path) -> tuple[str, str]:
    record = result_record(log_dir)
    valid = record.get("result_valid")
    verdict = "VALID" if valid is True else "INVALID" if valid is False else "done"
    rate = record.get("samples_per_second")
    detail = f"{rate:.1f} samples/s" if isinstance(rate, (int, float)) else ""
    accuracy = record.get("accuracy")
    if isinstance(accuracy, dict) and accuracy.get("line"):
        detail = f"{detail}, {accuracy['line']}".lstrip(", ")
    return verdict, f"{detail} ({log_dir})"


def main(argv: Sequence[str] | None = None) -> int:
    return run_entry_point(
        "run", lambda: run_all(parse_request(sys.argv[1:] if argv is None else argv))
    )


def entry() -> None:
    sys.exit(main())
