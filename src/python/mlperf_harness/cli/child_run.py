"""One run of a benchmark in a forked child process: the submission pipeline's runs, and the
cartesian runs of `:run`, each in a process of its own."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Sequence

from mlperf_harness.benchmarks.catalog import load_benchmark
from mlperf_harness.cli.parsing import run_entry_point
from mlperf_harness.cli.run_harness import plan_run, run_harness
from mlperf_harness.errors import HarnessError


def _run_one(benchmark_name: str, argv: Sequence[str]) -> None:
    """A forked child's whole life: one run, then exit with the run targets' exit codes."""
    benchmark = load_benchmark(benchmark_name)

    def run() -> int:
        run_harness(benchmark, plan_run(benchmark, benchmark.parse_options(argv)))
        return 0

    sys.stdout.flush()
    os._exit(run_entry_point(benchmark_name, run))


def run_in_child(benchmark_name: str, argv: Sequence[str], title: str) -> None:
    """Run in a forked child of this process, which has never started a LoadGen test: LoadGen keeps
    process-wide state between tests (it logs an error for every user.conf after a process's first),
    and a child that is interrupted takes only its own run down. Ctrl-C reaches the child too (one
    process group); the parent waits for it to leave, then stops."""
    child = multiprocessing.get_context("fork").Process(
        target=_run_one, args=(benchmark_name, list(argv)), name=f"run {title}"
    )
    child.start()
    try:
        child.join()
    except KeyboardInterrupt:
        child.join(timeout=10)  # it saw the same Ctrl-C and is leaving; a second one ends it now
        if child.is_alive():
            child.kill()
        raise
    if child.exitcode == 130:
        raise KeyboardInterrupt
    if child.exitcode != 0:
        raise HarnessError(f"{title} failed (exit status {child.exitcode}): see its message above")
