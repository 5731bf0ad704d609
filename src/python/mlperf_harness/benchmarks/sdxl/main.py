"""`pants run benchmarks/sdxl:<scenario>` lands here."""

from __future__ import annotations

import sys

from mlperf_harness.benchmarks.sdxl.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli


def main() -> None:
    sys.exit(run_benchmark_cli(BENCHMARK))


if __name__ == "__main__":
    main()
