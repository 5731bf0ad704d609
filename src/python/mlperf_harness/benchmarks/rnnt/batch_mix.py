"""What one RNN-T call costs against its batch size and its utterances' length mix: the figure that
says how a scenario should batch. A batch decodes until its longest utterance is done (every row
steps until then, on the GPU as in ONNX Runtime's loop), so a batch's cost follows its longest
utterance, not its mean; the encoder's follows its frames.

Takes the run targets' flags (`--backend onnxruntime` on a CPU, `--backend torch ...` on a GPU),
loads the run's samples as the harness does, and times one runner's calls (no LoadGen, no harness
threads) for each batch size of `--batches` on batches of three mixes:

- arrival: drawn at random from the loaded samples (Server's batches in arrival order);
- buckets: drawn at random from one of `--buckets` equal shares of the samples by length
  (harness/batching.length_buckets: Server's batches with --server_length_buckets), the shares
  taken in turn;
- length: Offline's query cut in length order (raw_timing.length_ordered_batches).

`--seconds` each row (at least 3 calls), a batch size's three mixes timed call by call in turn
(a shared CPU's load then weighs on each alike). One table printed; `--out` writes the rows as
JSON.

    python -m mlperf_harness.benchmarks.rnnt.batch_mix --batches 4 16 64 --seconds 10
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.raw_timing import (
    SEED,
    length_ordered_batches,
    loaded_runners,
    percentiles,
)
from mlperf_harness.benchmarks.rnnt.benchmark import BENCHMARK
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import length_buckets
from mlperf_harness.harness.sample_store import SampleStore

MIXES = ("arrival", "buckets", "length")
MIN_CALLS = 3
DEFAULT_BUCKETS = 4


def mix_batches(
    mix: str,
    indices: Sequence[int],
    lengths: npt.NDArray[np.int64],
    batch: int,
    buckets: int,
) -> Iterator[list[int]]:
    """An endless stream of batches of `batch` sample indices, drawn from `indices` as `mix` says
    (MIXES), seeded: every batch size and mix sees the same draws whatever the machine."""
    rng = np.random.default_rng(SEED)
    pool = np.asarray(indices, np.int64)
    if mix == "arrival":
        while True:
            yield rng.choice(pool, batch).tolist()
    elif mix == "buckets":
        shares = length_buckets(lengths[pool], buckets)
        members = [pool[shares == k] for k in range(buckets) if np.any(shares == k)]
        turn = 0
        while True:
            yield rng.choice(members[turn % len(members)], batch).tolist()
            turn += 1
    elif mix == "length":
        rows = length_ordered_batches(rng.permutation(pool), batch, lengths)
        turn = 0
        while True:
            yield rows[turn % len(rows)].tolist()
            turn += 1
    else:
        raise HarnessError(f"the batch mix is one of {MIXES}, not {mix!r}")


def time_mixes(
    runner: Runner,
    store: SampleStore,
    streams: dict[str, Iterator[list[int]]],
    lengths: npt.NDArray[np.int64],
    seconds: float,
) -> dict[str, dict[str, Any]]:
    """One runner's calls on each stream of `streams` in turn, one call of each mix after another
    for `seconds` a mix (at least MIN_CALLS each), so that every mix sees the same machine (a
    shared CPU's load drifts): per mix the calls' times, the samples a second, and the mean of each
    batch's longest and mean sample length (frames of features): the decoder's steps follow the
    longest, its useful work the mean."""
    timed: dict[str, dict[str, list[float]]] = {
        mix: {"times": [], "longest": [], "mean": [], "samples": []} for mix in streams
    }
    deadline = time.perf_counter() + seconds * len(streams)
    while (
        min(len(t["times"]) for t in timed.values()) < MIN_CALLS or time.perf_counter() < deadline
    ):
        for mix, stream in streams.items():
            chosen = next(stream)
            began = time.perf_counter()
            runner.infer_samples(store, chosen)
            record = timed[mix]
            record["times"].append((time.perf_counter() - began) * 1e3)
            record["longest"].append(float(lengths[chosen].max()))
            record["mean"].append(float(lengths[chosen].mean()))
            record["samples"].append(float(len(chosen)))
    return {
        mix: {
            "calls": len(t["times"]),
            "latency_ms": percentiles(t["times"]),
            "samples_per_second": sum(t["samples"]) / (sum(t["times"]) / 1e3),
            "longest_frames": statistics.fmean(t["longest"]),
            "mean_frames": statistics.fmean(t["mean"]),
        }
        for mix, t in timed.items()
    }


def measure(
    batch_sizes: Sequence[int], buckets: int, seconds: float, run_flags: Sequence[str]
) -> dict[str, Any]:
    with loaded_runners(
        BENCHMARK, run_flags, "rnnt.batch_mix", backends=("onnxruntime", "torch")
    ) as loaded:
        lengths = loaded.store.sample_lengths()
        if lengths is None:
            raise HarnessError("rnnt.batch_mix: the run's samples have no lengths")
        runner, rows = loaded.runners[0], []
        for batch in batch_sizes:
            print(f"rnnt batch_mix: batch {batch}...", file=sys.stderr, flush=True)
            streams = {
                mix: mix_batches(mix, loaded.indices, lengths, batch, buckets) for mix in MIXES
            }
            timed = time_mixes(runner, loaded.store, streams, lengths, seconds)
            rows += [{"batch_size": batch, "mix": mix, **timed[mix]} for mix in MIXES]
        return {
            "backend": loaded.plan.backend,
            "samples": len(loaded.indices),
            "buckets": buckets,
            "rows": rows,
        }


def table(record: dict[str, Any]) -> list[str]:
    """The rows as a markdown table, each against the length-ordered batches of its size."""
    length_rate = {
        row["batch_size"]: row["samples_per_second"]
        for row in record["rows"]
        if row["mix"] == "length"
    }
    lines = [
        f"| batch | mix | calls | p50 ms a call | samples/s | vs length order "
        f"| longest / mean frames |  ({record['backend']}, buckets = {record['buckets']})",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in record["rows"]:
        versus = row["samples_per_second"] / length_rate[row["batch_size"]]
        lines.append(
            f"| {row['batch_size']:,} | {row['mix']} | {row['calls']} "
            f"| {row['latency_ms']['p50']:.1f} | {row['samples_per_second']:,.1f} "
            f"| {versus:.2f} | {row['longest_frames'] / row['mean_frames']:.2f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="rnnt.batch_mix", description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=positive_int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--buckets", type=positive_int, default=DEFAULT_BUCKETS)
    parser.add_argument("--seconds", type=positive_float, default=5.0, help="each row")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.batches, args.buckets, args.seconds, run_flags)
        print("\n".join(table(record)))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("rnnt.batch_mix", run)


if __name__ == "__main__":
    raise SystemExit(main())
