"""Entry point shared by every benchmark target: parse the command line, run, report."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.options import parse_run_options
from mlperf_harness.cli.parsing import ParserExit
from mlperf_harness.cli.run_harness import format_summary, plan_run, run_harness
from mlperf_harness.errors import HarnessError


def run_benchmark_cli(benchmark: Benchmark, argv: Sequence[str] | None = None) -> int:
    prog = benchmark.name
    try:
        options = parse_run_options(sys.argv[1:] if argv is None else argv, prog)
        plan = plan_run(benchmark, options)
        if options.show_config:
            print(plan.settings.describe())
            return 0
        record = run_harness(benchmark, plan)
    except ParserExit as done:  # --help, or a bad flag (already reported on one line)
        return done.status
    except HarnessError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    print(format_summary(record))
    return 0
