"""The raw speed of RNN-T's torch runners outside the harness: what docs/performance.md holds the
harness to. Takes the run targets' flags (`--backend torch --model_path <real-size dir> ...`), so
the runners, graphs and loaded utterances are exactly those of the harness run it is compared with;
with no LoadGen and no harness threads, every runner on its own thread takes the next batch of one
shuffled pass over the loaded utterances; then one runner's latency for a single utterance (what a
SingleStream query costs at least: raw.json's batch-1 engine, which gpu_table.py holds SingleStream
runs to). Prints a line; `--out` writes raw.json in the shape benchmarks/gpu_table.py reads.

`--profile` instead: where one call's time goes (call_profile.py) on the first runner, for each
batch size of `--profile_batches` (default: the run's, and PROFILE_SMALL where that is smaller), one
table printed and `--out` written (a JSON record) after each batch."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.raw_timing import (
    SEED,
    loaded_runners,
    runner_throughput,
    single_sample_latency,
)
from mlperf_harness.benchmarks.rnnt.benchmark import BENCHMARK
from mlperf_harness.benchmarks.rnnt.call_profile import first_batch, profile_batch, table
from mlperf_harness.benchmarks.rnnt.torch_engine import TorchRnntRunner
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point
from mlperf_harness.errors import HarnessError

SINGLE_CALLS = 200
PROFILE_SMALL = 256  # Server's batch on the GPU systems (configs.py)


def measure(seconds: float, single_calls: int, run_flags: Sequence[str]) -> dict[str, Any]:
    with loaded_runners(BENCHMARK, run_flags, "rnnt.torch_raw") as loaded:
        batch = loaded.plan.settings.settings.batch_size or 1
        precision = loaded.plan.settings.settings.precision
        engine = runner_throughput(loaded.runners, loaded.store, loaded.indices, batch, seconds)
        engines = [{"batch_size": batch, "precision": precision, **engine}]
        if batch != 1:
            single = single_sample_latency(
                loaded.runners[0], loaded.store, loaded.indices, single_calls
            )
            engines.append({"batch_size": 1, "precision": precision, **single})
        return {"samples": len(loaded.indices), "runners": len(loaded.runners), "engines": engines}


def profile(
    batches: Sequence[int] | None, run_flags: Sequence[str], out: Path | None
) -> dict[str, Any]:
    """call_profile.profile_batch on the first runner for each batch size (`None`: the run's
    and PROFILE_SMALL), the record (and `out`) renewed after each."""
    with loaded_runners(BENCHMARK, run_flags, "rnnt.torch_raw") as loaded:
        runner = loaded.runners[0]
        store = loaded.store
        if not isinstance(runner, TorchRnntRunner) or not isinstance(store, UtteranceStore):
            raise HarnessError("torch_raw --profile profiles the torch backend's RNN-T runner")
        engine = runner.engine()
        torch = engine.torch
        run_batch = loaded.plan.settings.settings.batch_size or 1
        sizes = list(dict.fromkeys(batches or [run_batch, min(run_batch, PROFILE_SMALL)]))
        record: dict[str, Any] = {
            "device": torch.cuda.get_device_name(engine.device) if engine.cuda else "cpu",
            "torch": torch.__version__,
            "run_batch": run_batch,
            "batches": [],
        }
        for size in sizes:
            print(f"rnnt profile: batch {size}...", flush=True)
            chosen = first_batch(loaded.indices, size, SEED)
            record["batches"].append(
                profile_batch(torch, runner, store, chosen, on_gpu=engine.cuda)
            )
            record["table"] = table(record["batches"], engine.cuda)
            if out is not None:
                write_json_atomic(out, record)
        return record


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--single_calls", type=positive_int, default=SINGLE_CALLS)
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")
    parser.add_argument("--profile", action="store_true", help="one call's time by part instead")
    parser.add_argument("--profile_batches", type=positive_int, nargs="+", default=None)

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        if args.profile:
            print("\n".join(profile(args.profile_batches, run_flags, args.out)["table"]))
            return 0
        record = measure(args.seconds, args.single_calls, run_flags)
        for engine in record["engines"]:
            latency = engine["latency_ms"]
            print(
                f"rnnt raw: {record['samples']} utterances loaded, {record['runners']} runners, "
                f"batch {engine['batch_size']}: {engine['samples_per_second']:,.1f} samples/s, "
                f"p50 {latency['p50']:.2f} ms, p90 {latency['p90']:.2f} ms a call"
            )
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
