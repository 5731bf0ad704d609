"""The raw speed of 3D-UNet's torch engine outside the harness: what docs/performance.md holds the
harness to. Takes the run targets' flags (`--backend torch --precision fp16 --start_from_device
...`), so the runners, engine and volumes are exactly those of the harness run it is compared with.

With no LoadGen and no harness threads, on the loaded volumes:
  throughput -- one thread per runner, each taking the next volume of one shuffled pass;
  latency    -- one runner, one random volume per call, timed on the host (SingleStream's least);
  graph      -- the engine's CUDA graph replayed back to back (CUDA events): windows per second of
                the engine alone, without the windows' copies, blending or argmax.
Prints a table; `--out` writes raw.json in the shape benchmarks/gpu_table.py reads.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.torch_cuda.volume_runner import VolumeRunner
from mlperf_harness.benchmarks.raw_timing import (
    loaded_runners,
    runner_throughput,
    single_sample_latency,
)
from mlperf_harness.benchmarks.unet3d.benchmark import BENCHMARK
from mlperf_harness.benchmarks.unet3d.sliding_window import window_count
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point

GRAPH_REPLAYS = 20


def measure(seconds: float, latency_calls: int, run_flags: Sequence[str]) -> dict[str, Any]:
    with loaded_runners(BENCHMARK, run_flags, "3d-unet.torch_raw") as loaded:
        runners = [r for r in loaded.runners if isinstance(r, VolumeRunner)]
        first = runners[0]
        windows = [window_count(tuple(loaded.store.gather([i]).shape[2:])) for i in loaded.indices]
        print(
            f"3d-unet torch_raw: {len(loaded.indices)} volumes, {sum(windows)} windows, "
            f"{len(runners)} runners",
            file=sys.stderr,
        )
        ms = first.graph_milliseconds(GRAPH_REPLAYS)
        return {
            "samples": len(loaded.indices),
            "windows": sum(windows),
            "runners": len(runners),
            "cuda_graphs": all(r.uses_cuda_graph for r in runners),
            "engines": [
                {
                    "batch_size": 1,
                    "precision": loaded.plan.settings.settings.precision,
                    **runner_throughput(runners, loaded.store, loaded.indices, 1, seconds),
                },
            ],
            "latency": single_sample_latency(first, loaded.store, loaded.indices, latency_calls),
            "graph": {
                "windows_per_call": first.batch_size,
                "ms": ms,
                "windows_per_second": first.batch_size * 1e3 / ms,
            },
        }


def format_record(record: dict[str, Any]) -> str:
    rate, latency, graph = record["engines"][0], record["latency"]["latency_ms"], record["graph"]
    return "\n".join(
        [
            f"{record['samples']} volumes, {record['windows']} windows; {record['runners']} "
            f"runners, CUDA graphs {'on' if record['cuda_graphs'] else 'OFF'}",
            f"raw, runners driven directly: {rate['samples_per_second']:.2f} volumes/s",
            f"raw, one volume per call: p50 {latency['p50']:.1f} ms, p90 {latency['p90']:.1f} ms",
            f"graph alone: {graph['ms']:.2f} ms per {graph['windows_per_call']} windows "
            f"({graph['windows_per_second']:,.0f} windows/s)",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--latency_calls", type=positive_int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.seconds, args.latency_calls, run_flags)
        print(format_record(record))
        if args.out is not None:
            # gpu_table compares SingleStream with the raw batch-1 latency: one volume per call.
            record["engines"][0]["latency_ms"] = record["latency"]["latency_ms"]
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
