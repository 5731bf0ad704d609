"""The raw speed of BERT's torch engine outside the harness: what docs/performance.md holds the
harness to. Takes the run targets' flags (`--backend torch --batch_size 256 --start_from_device
...`), so the runners, buckets and samples are exactly those of the harness run it is compared with.

With no LoadGen and no harness threads, on the benchmark's loaded samples:
  throughput -- one thread per runner (as the harness has), each taking the next batch of the
                harness's batch size from one shuffled pass over the samples and calling the runner;
                measured as the harness runs (large batches varlen, varlen_batches.py) and again
                with every batch on the length buckets' graphs;
  latency    -- one runner, one random sample per call, timed on the host (SingleStream's least);
  graphs     -- each length bucket's largest CUDA graph replayed back to back (CUDA events): the
                engine alone, without sorting, staging or copies;
  check      -- with --onnx MODEL, the logits of --check_samples samples against ONNX Runtime's
                on the CPU (the model the engine was built from), run on the buckets and varlen.
Prints a table; `--out` writes raw.json in the shape benchmarks/gpu_table.py reads.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.torch_cuda.bert_runner import BertRunner, sample_lengths
from mlperf_harness.benchmarks.bert.benchmark import BENCHMARK
from mlperf_harness.benchmarks.raw_timing import (
    loaded_runners,
    runner_throughput,
    single_sample_latency,
)
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point
from mlperf_harness.harness.sample_store import SampleStore

LATENCY_CALLS = 300
GRAPH_REPLAYS = 20


def check_against_onnx(
    runner: BertRunner, store: SampleStore, indices: npt.NDArray[Any], onnx_model: Path, count: int
) -> dict[str, Any]:
    from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner
    from mlperf_harness.benchmarks.bert.stand_in_model import INPUT_NAMES, OUTPUT_NAMES

    chosen = indices[:count].tolist()
    rows = np.asarray(store.gather(chosen))
    ours = np.asarray(runner.infer_samples(store, chosen), dtype=np.float32)
    with OnnxRuntimeRunner(
        onnx_model, packed_inputs=INPUT_NAMES, stacked_outputs=OUTPUT_NAMES
    ) as ort:
        reference = np.asarray(ort.infer(rows), dtype=np.float32)
    lengths = sample_lengths(rows)
    worst, same_start, same_end = 0.0, 0, 0
    for i, length in enumerate(lengths):
        a, b = ours[i, :length], reference[i, :length]
        worst = max(worst, float(np.abs(a - b).max()))
        same_start += int(a[:, 0].argmax() == b[:, 0].argmax())
        same_end += int(a[:, 1].argmax() == b[:, 1].argmax())
    return {
        "samples": len(chosen),
        "max_abs_logit_difference": worst,
        "same_start_argmax": same_start,
        "same_end_argmax": same_end,
    }


def measure(args: argparse.Namespace, run_flags: list[str]) -> dict[str, Any]:
    with loaded_runners(BENCHMARK, run_flags, "bert.torch_raw") as loaded_set:
        runners = [r for r in loaded_set.runners if isinstance(r, BertRunner)]
        store, indices = loaded_set.store, np.asarray(loaded_set.indices)
        options = loaded_set.options
        batch = options.batch_size or 1
        loaded = store.loaded_samples()
        lengths = sample_lengths(loaded[0]) if loaded is not None else np.empty(0)
        first = runners[0]
        record: dict[str, Any] = {
            "samples": len(indices),
            "mean_length": float(lengths.mean()) if len(lengths) else 0.0,
            "bucket_counts": {
                str(seq): int(((lengths > low) & (lengths <= seq)).sum())
                for low, seq in zip((0, *first.buckets[:-1]), first.buckets, strict=True)
            },
            "runners": len(runners),
            "cuda_graphs": all(r.uses_cuda_graph for r in runners),
            "engines": [],
        }
        print(f"bert torch_raw: {len(indices)} samples, {len(runners)} runners", file=sys.stderr)
        rate = runner_throughput(runners, store, indices.tolist(), batch, args.seconds)
        record["engines"].append({"batch_size": batch, "precision": "fp16", **rate})
        with _varlen_set(runners, None):
            record["buckets_only"] = {
                "batch_size": batch,
                **runner_throughput(runners, store, indices.tolist(), batch, args.seconds),
            }
        if batch != 1:
            record["engines"].append(
                {
                    "batch_size": 1,
                    "precision": "fp16",
                    **single_sample_latency(first, store, indices.tolist(), LATENCY_CALLS),
                }
            )
        largest = first.ladder[-1]
        record["graphs"] = []
        for seq in first.buckets:
            ms = first.graph_milliseconds(seq, largest, GRAPH_REPLAYS)
            record["graphs"].append(
                {"seq": seq, "batch": largest, "ms": ms, "samples_per_second": largest * 1e3 / ms}
            )
        if args.onnx is not None:
            record["checks"] = {}
            for path, threshold in (("buckets", None), ("varlen", 1)):
                with _varlen_set([first], threshold):
                    record["checks"][path] = check_against_onnx(
                        first, store, indices, args.onnx, args.check_samples
                    )
        return record


@contextlib.contextmanager
def _varlen_set(runners: Sequence[BertRunner], threshold: int | None) -> Iterator[None]:
    """The runners' varlen threshold set to `threshold` (None: buckets only) for a while."""
    before = [runner.varlen_min_tokens for runner in runners]
    for runner in runners:
        runner.varlen_min_tokens = threshold
    try:
        yield
    finally:
        for runner, value in zip(runners, before, strict=True):
            runner.varlen_min_tokens = value


def format_record(record: dict[str, Any]) -> str:
    lines = [
        f"{record['samples']} samples, mean real length {record['mean_length']:.0f} tokens, "
        f"per bucket {record['bucket_counts']}; {record['runners']} runners, "
        f"CUDA graphs {'on' if record['cuda_graphs'] else 'OFF'}",
        f"{'raw (runner, no LoadGen)':<30}{'samples/s':>11}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}",
    ]
    rows = [("batch " + str(row["batch_size"]), row) for row in record["engines"]]
    if "buckets_only" in record:
        rows.insert(
            1,
            (f"batch {record['buckets_only']['batch_size']}, buckets only", record["buckets_only"]),
        )
    for label, row in rows:
        ms = row["latency_ms"]
        lines.append(
            f"{label:<30}{row['samples_per_second']:>11,.0f}"
            f"{ms['p50']:>9.3f}{ms['p90']:>9.3f}{ms['p99']:>9.3f}"
        )
    lines.append(f"{'graph alone (bucket x batch)':<30}{'samples/s':>11}{'ms':>9}")
    for row in record["graphs"]:
        lines.append(
            f"{str(row['seq']) + ' x ' + str(row['batch']):<30}{row['samples_per_second']:>11,.0f}"
            f"{row['ms']:>9.3f}"
        )
    for path, check in record.get("checks", {}).items():
        lines.append(
            f"{path} vs ONNX Runtime fp32 on {check['samples']} samples: max |logit difference| "
            f"{check['max_abs_logit_difference']:.4f}, same start {check['same_start_argmax']}, "
            f"same end {check['same_end_argmax']}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--onnx", type=Path, default=None, help="check logits against this model")
    parser.add_argument("--check_samples", type=positive_int, default=8)
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(args, run_flags)
        print(format_record(record))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
