"""The raw speed of RNN-T's torch runners outside the harness: what docs/performance.md holds the
harness to. Takes the run targets' flags (`--backend torch --model_path <real-size dir> ...`), so
the runners, graphs and loaded utterances are exactly those of the harness run it is compared with;
with no LoadGen and no harness threads, every runner on its own thread takes the next batch of
Offline's query as the harness cuts it: in length order (raw_timing.length_ordered_batches), or
with --no-order_by_length the next batch of one shuffled pass over the loaded utterances (arrival
order); then one runner's latency for a single utterance (what a SingleStream query costs at least:
raw.json's batch-1 engine, which gpu_table.py holds SingleStream runs to). Prints a line; `--out`
writes raw.json in the shape benchmarks/gpu_table.py reads.

`--whole_query_seconds S` then also runs the engine alone on an Offline run's own work: the one
query LoadGen would issue to a run of S seconds told the rate just measured, cut in the run's order
and taken batch by batch to its end (raw_timing.whole_query_throughput): raw.json's "whole_query",
the figure an Offline harness run of S seconds compares with most closely (the shuffled timing
above samples batches of every length in a few seconds; the run takes them shortest first, its
two runners on like lengths side by side, and drains on the longest).

`--order_table` then also times Offline's batches in arrival order and in length order with each
encoder input (torch_engine.ENCODER_INPUTS: auto, padded, packed), `--seconds` each: one table
printed, its rows in raw.json's "offline_batches".

`--profile` instead: where one call's time goes (call_profile.py) on the first runner, for each
batch size of `--profile_batches` (default: the run's, and PROFILE_SMALL where that is smaller) and
each of PROFILED: a batch in arrival order (torch_raw's shuffle) and one in length order (the
median batch of Offline's query cut in length order), the encoder's input as a run chooses it
("auto"), and the length-ordered batch again with the packed encoder (the A/B of
padding against packing on the same batch); one table printed and `--out` written (a JSON
record) after each."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.raw_timing import (
    SEED,
    length_ordered_batches,
    loaded_runners,
    offline_query_samples,
    runner_throughput,
    single_sample_latency,
    whole_query_throughput,
)
from mlperf_harness.benchmarks.rnnt.benchmark import BENCHMARK
from mlperf_harness.benchmarks.rnnt.call_profile import first_batch, profile_batch, table
from mlperf_harness.benchmarks.rnnt.torch_engine import ENCODER_INPUTS, TorchRnntRunner
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point
from mlperf_harness.errors import HarnessError

SINGLE_CALLS = 200
PROFILE_SMALL = 256  # Server's batch on the GPU systems (configs.py)
# The profiled batches of each size: (order, encoder input).
PROFILED = (("arrival", "auto"), ("length", "auto"), ("length", "packed"))


ORDERS = ("arrival", "length")


def set_encoder_input(runners: Sequence[Any], mode: str) -> None:
    for runner in runners:
        if isinstance(runner, TorchRnntRunner):
            runner.engine().set_encoder_input(mode)


def measure(
    seconds: float,
    single_calls: int,
    run_flags: Sequence[str],
    order_table: bool = False,
    whole_query_seconds: float | None = None,
) -> dict[str, Any]:
    with loaded_runners(BENCHMARK, run_flags, "rnnt.torch_raw") as loaded:
        settings = loaded.plan.settings.settings
        batch, precision = settings.batch_size or 1, settings.precision
        store, indices, runners = loaded.store, loaded.indices, loaded.runners
        lengths = store.sample_lengths() if settings.order_by_length else None

        def throughput(by_length: bool) -> dict[str, Any]:
            chosen = lengths if by_length else None
            return runner_throughput(runners, store, indices, batch, seconds, chosen)

        order = ORDERS[lengths is not None]
        timed = throughput(lengths is not None)
        engines = [{"batch_size": batch, "precision": precision, "order": order, **timed}]
        if batch != 1:
            single = single_sample_latency(runners[0], store, indices, single_calls)
            engines.append({"batch_size": 1, "precision": precision, **single})
        record = {"samples": len(indices), "runners": len(runners), "engines": engines}
        if whole_query_seconds is not None:
            samples = offline_query_samples(timed["samples_per_second"], whole_query_seconds)
            print(f"rnnt raw: the whole query of a {whole_query_seconds:g} s run ({samples:,} "
                  "samples) in the run's order...", flush=True)  # fmt: skip
            record["whole_query"] = {
                "order": order,
                "run_seconds": whole_query_seconds,
                **whole_query_throughput(runners, store, indices, batch, samples, lengths),
            }
        if order_table:
            lengths = store.sample_lengths()
            if lengths is None:
                raise HarnessError("--order_table needs samples with lengths")
            rows = []
            for order in ORDERS:
                for mode in ENCODER_INPUTS:
                    print(f"rnnt raw: {order} order, encoder {mode}...", flush=True)
                    set_encoder_input(runners, mode)
                    rows.append(
                        {"order": order, "encoder_input": mode, **throughput(order != "arrival")}
                    )
            set_encoder_input(runners, "auto")
            record["offline_batches"] = rows
        return record


def order_lines(rows: Sequence[dict[str, Any]], batch: int) -> list[str]:
    """The --order_table table: Offline's batches by order and encoder input."""
    lines = [
        f"| Offline batch {batch:,}: order | encoder input | samples/s | p50 ms a call "
        "| p90 ms a call |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        latency = row["latency_ms"]
        lines.append(
            f"| {row['order']} | {row['encoder_input']} | {row['samples_per_second']:,.1f} "
            f"| {latency['p50']:.2f} | {latency['p90']:.2f} |"
        )
    return lines


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
            for order, mode in PROFILED:
                print(f"rnnt profile: batch {size}, {order} order, encoder {mode}...", flush=True)
                chosen = (
                    first_batch(loaded.indices, size, SEED)
                    if order == "arrival"
                    else median_length_batch(loaded.indices, size, store.lengths)
                )
                engine.set_encoder_input(mode)
                try:
                    profiled = profile_batch(
                        torch, runner, store, chosen, on_gpu=engine.cuda, label=f"{order} order"
                    )
                finally:
                    engine.set_encoder_input("auto")
                record["batches"].append(profiled)
                record["table"] = table(record["batches"], engine.cuda)
                if out is not None:
                    write_json_atomic(out, record)
        return record


def median_length_batch(indices: Sequence[int], batch: int, lengths: Any) -> list[int]:
    """Of Offline's query cut in length order (raw_timing.length_ordered_batches), the batch whose
    longest utterance is the median of the batches' longest."""
    order = np.random.default_rng(SEED).permutation(np.asarray(indices))
    rows = length_ordered_batches(order, batch, lengths)
    longest = lengths[rows].max(axis=1)
    middle = int(np.argsort(longest, kind="stable")[len(rows) // 2])
    return [int(i) for i in rows[middle]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--single_calls", type=positive_int, default=SINGLE_CALLS)
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")
    parser.add_argument("--profile", action="store_true", help="one call's time by part instead")
    parser.add_argument("--profile_batches", type=positive_int, nargs="+", default=None)
    parser.add_argument(
        "--whole_query_seconds",
        type=positive_float,
        default=None,
        help="also run the whole Offline query of a run this long, in the run's order",
    )
    parser.add_argument(
        "--order_table",
        action="store_true",
        help="also time Offline's batches by order (arrival, length) and encoder input",
    )

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        if args.profile:
            print("\n".join(profile(args.profile_batches, run_flags, args.out)["table"]))
            return 0
        record = measure(
            args.seconds, args.single_calls, run_flags, args.order_table, args.whole_query_seconds
        )
        for engine in record["engines"]:
            latency = engine["latency_ms"]
            order = f" ({engine['order']} order)" if "order" in engine else ""
            print(
                f"rnnt raw: {record['samples']} utterances loaded, {record['runners']} runners, "
                f"batch {engine['batch_size']}{order}: {engine['samples_per_second']:,.1f} "
                f"samples/s, p50 {latency['p50']:.2f} ms, p90 {latency['p90']:.2f} ms a call"
            )
        if "whole_query" in record:
            whole = record["whole_query"]
            print(
                f"rnnt raw: whole query of {whole['samples']:,} samples ({whole['batches']} "
                f"batches, {whole['order']} order) in {whole['seconds']:.1f} s: "
                f"{whole['samples_per_second']:,.1f} samples/s"
            )
        if "offline_batches" in record:
            print(
                "\n".join(
                    order_lines(record["offline_batches"], record["engines"][0]["batch_size"])
                )
            )
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
