"""How much of the engine's own speed the harness delivers: ONNX Runtime on ResNet-50 in Offline.

In one process, on the same batches of the same preprocessed samples with the same runner:
  raw      -- `runner.infer` in a plain loop (no LoadGen, no harness),
  harness  -- the Offline scenario under LoadGen through the full harness,
  raw      -- again, so drift of the machine shows up as a difference between the two raw figures.
Prints a table; `docs/performance.md` records the figures with this command.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    positive_float,
    positive_int,
    run_entry_point,
)
from mlperf_harness.cli.run_harness import plan_run, run_harness
from mlperf_harness.errors import HarnessError


def raw_samples_per_second(
    runner: Runner, samples: npt.NDArray[np.generic], batch_size: int, seconds: float
) -> float:
    done, started, position = 0, time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        indices = [(position + i) % len(samples) for i in range(batch_size)]
        runner.infer(samples[indices])
        position += batch_size
        done += batch_size
    return done / (time.perf_counter() - started)


def measure(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as logs:
        flags = [
            "--scenario", "Offline", "--batch_size", str(args.batch_size),
            "--min_duration_ms", str(int(args.seconds * 1000)), "--log_dir", logs,
        ]  # fmt: skip
        if args.scratch_path is not None:
            flags += ["--scratch_path", str(args.scratch_path)]
        plan = plan_run(BENCHMARK, BENCHMARK.parse_options(flags, "harness_vs_raw"))
        store = plan.prepared.store
        indices = list(range(store.performance_count))
        store.load(indices)
        samples = store.gather(indices)
        store.unload(indices)
        model = plan.prepared.backend_options
        if model.model_path is None:
            raise HarnessError("the benchmark resolved no model file")
        with OnnxRuntimeRunner(model.model_path, model.output_name) as runner:
            runner.infer(samples[: args.batch_size])  # warm-up: first call allocates
            raw_before = raw_samples_per_second(runner, samples, args.batch_size, args.seconds)
        # LoadGen sizes the Offline query as expected QPS x min duration x 1.1: aim above the
        # raw rate so the query lasts past the minimum duration even if the harness is faster.
        expected = ["--offline_expected_qps", f"{1.2 * raw_before:.3f}"]
        plan = plan_run(BENCHMARK, BENCHMARK.parse_options([*flags, *expected], "harness_vs_raw"))
        record = run_harness(BENCHMARK, plan)
        with OnnxRuntimeRunner(model.model_path, model.output_name) as runner:
            runner.infer(samples[: args.batch_size])
            raw_after = raw_samples_per_second(runner, samples, args.batch_size, args.seconds)
    harness = record.result.samples_per_second or 0.0
    raw = (raw_before + raw_after) / 2
    print(
        f"ResNet-50 ({'stand-in' if plan.prepared.stand_in else 'model'}), onnxruntime CPU, "
        f"batch {args.batch_size}, {args.seconds:.0f} s each, {record.system_name}"
    )
    print(f"{'measurement':<28}{'samples/s':>12}")
    print(f"{'raw runner.infer (before)':<28}{raw_before:>12.2f}")
    print(f"{'harness Offline (LoadGen)':<28}{harness:>12.2f}")
    print(f"{'raw runner.infer (after)':<28}{raw_after:>12.2f}")
    reasons = "; ".join(record.result.invalid_reasons)
    verdict = "VALID" if record.result.valid else f"INVALID: {reasons}"
    print(f"harness / mean raw = {harness / raw:.1%}  (LoadGen: {verdict})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="harness_vs_raw", description=__doc__)
    parser.add_argument("--seconds", type=positive_float, default=30.0, help="each measurement")
    parser.add_argument("--batch_size", type=positive_int, default=8)
    add_scratch_flag(parser)
    return run_entry_point(
        parser.prog, lambda: measure(parser.parse_args(sys.argv[1:] if argv is None else argv))
    )


if __name__ == "__main__":
    raise SystemExit(main())
