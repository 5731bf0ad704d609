"""The raw speed of DLRM-v2's torch runners outside the harness: what docs/performance.md holds the
harness to. Takes the run targets' flags (`--backend torch --model_path <real-size spec> ...`), so
the runners, tables and loaded samples are exactly those of the harness run it is compared with;
with no LoadGen and no harness threads, every runner on its own thread takes the next batch of one
shuffled pass over the loaded samples. Prints a line; `--out` writes raw.json in the shape
benchmarks/gpu_table.py reads."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.dlrm_v2.benchmark import BENCHMARK
from mlperf_harness.benchmarks.raw_timing import loaded_runners, runner_throughput
from mlperf_harness.cli.parsing import OneLineParser, positive_float, run_entry_point


def measure(seconds: float, run_flags: Sequence[str]) -> dict[str, Any]:
    with loaded_runners(BENCHMARK, run_flags, "dlrm-v2.torch_raw") as loaded:
        batch = loaded.plan.settings.settings.batch_size or 1
        engine = runner_throughput(loaded.runners, loaded.store, loaded.indices, batch, seconds)
        return {
            "samples": len(loaded.indices),
            "runners": len(loaded.runners),
            "engines": [
                {
                    "batch_size": batch,
                    "precision": loaded.plan.settings.settings.precision,
                    **engine,
                }
            ],
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.seconds, run_flags)
        engine = record["engines"][0]
        print(
            f"dlrm-v2 raw: {record['samples']} samples loaded, {record['runners']} runners, batch "
            f"{engine['batch_size']}: {engine['samples_per_second']:,.0f} samples/s, p50 "
            f"{engine['latency_ms']['p50']:.2f} ms a call"
        )
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
