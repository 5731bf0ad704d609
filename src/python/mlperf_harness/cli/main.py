"""Entry point shared by every benchmark target: parse the command line, run, report."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.parsing import run_entry_point
from mlperf_harness.cli.run_harness import exit_status, format_summary, plan_run, run_harness
from mlperf_harness.cli.run_settings import show_config


def run_benchmark_cli(benchmark: Benchmark, argv: Sequence[str] | None = None) -> int:
    def run() -> int:
        options = benchmark.parse_options(sys.argv[1:] if argv is None else argv)
        if options.show_config:  # before preparing: it must not build a model or an engine
            print(show_config(benchmark, options))
            return 0
        if options.harness == "triton":
            from mlperf_harness.triton.run import run_triton

            record = run_triton(benchmark, options)
        else:
            record = run_harness(benchmark, plan_run(benchmark, options))
        print(format_summary(record))
        return exit_status(record)

    return run_entry_point(benchmark.name, run)
