"""The raw speed of torch engines outside the harness: what docs/performance.md holds the harness to.

For each engine, on real preprocessed samples already in GPU memory, with no LoadGen, no harness
threads and no runner:
  throughput -- the engine's CUDA graph replayed back to back on one stream, timed with CUDA events;
  latency    -- per call, timed on the host, the way the runner runs a batch from GPU memory
                (start_from_device): the batch's rows written to pinned memory, one launch of the
                engine's round trip graph (capture_round_trips: the rows copied over, the samples
                gathered from GPU memory, the engine, the chosen output, ResNet-50's ArgMax,
                copied back to pinned memory) and a synchronise. Launched from C++
                (native.CudaGraphs: cuGraphLaunch and cuStreamSynchronize, the GIL released), as
                the harness's latency queries are (native_round_trips), this is the least a
                SingleStream or MultiStream query can cost on this engine: `latency_ms`. Calls
                taking turns with it replay the same graph from Python (torch's replay and
                synchronize): `replay_latency_ms`, what a query answered in Python cannot beat.
Prints a table; `--out` also writes the figures as JSON (benchmarks/resnet50/device/ runs it).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.torch_cuda.runner import (
    Engine,
    capture_round_trips,
    check_engine_host,
    load_package,
    warm_up_and_capture,
)
from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point
from mlperf_harness.datasets.imagenet.preprocess import FP32, PreprocessedSamples
from mlperf_harness.engines.torch_aot.metadata import read_io
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError

WARMUP_REPLAYS = 10


def measure_engine(
    torch: Any,
    engine: Path,
    samples: npt.NDArray[Any],
    *,
    seconds: float,
    latency_calls: int,
    output_name: str = stand_in_model.ARGMAX_OUTPUT,
    launch_from_cpp: bool = True,
) -> dict[str, Any]:
    """The engine's throughput and latency (the module's docstring). `launch_from_cpp` False:
    the latency loop only replays from Python (query_breakdown marks torch's calls)."""
    io = read_io(engine)
    check_engine_host(torch, io, engine, 0)
    batch = np.resize(samples, io.input_shape).astype(np.float32)  # samples repeated to a batch
    model = load_package(engine)
    x = torch.from_numpy(batch).cuda()
    pool = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)).cuda()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    out_index = io.output_index(output_name)

    def captured(call: Callable[[Any], list[Any]]) -> tuple[Any, Any]:
        """(graph, chosen output) of `call(model)`, warmed up and captured as the runner does."""
        loaded = Engine(io.batch_size, model)
        error = warm_up_and_capture(
            torch, stream, [loaded], lambda e: call(e.model)[out_index], want_graph=True
        )
        if error is not None:
            raise HarnessError(f"torch_raw: no CUDA graph of {engine}: {error}")
        return loaded.graph, loaded.output

    graph, out = captured(lambda m: m(x))
    with torch.cuda.stream(stream):
        for _ in range(WARMUP_REPLAYS):
            graph.replay()
    stream.synchronize()

    def replays_ms(count: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            start.record(stream)
            for _ in range(count):
                graph.replay()
            end.record(stream)
        end.synchronize()
        return float(start.elapsed_time(end))

    per_replay_ms = replays_ms(WARMUP_REPLAYS) / WARMUP_REPLAYS
    count = max(WARMUP_REPLAYS, round(seconds * 1e3 / per_replay_ms))
    throughput = count * io.batch_size / replays_ms(count) * 1e3

    host_out = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
    host_rows = torch.zeros(io.batch_size, dtype=torch.int64, pin_memory=True)
    gpu_rows = torch.zeros(io.batch_size, dtype=torch.int64, device="cuda")
    # The runner's round trip (runner.TorchRunner._capture_round_trips).
    loaded = Engine(io.batch_size, model)
    error = capture_round_trips(
        torch, stream, [loaded], pool, host_rows, gpu_rows, host_out, out_index
    )
    if error is not None:
        raise HarnessError(f"torch_raw: no round trip graph of {engine}: {error}")
    round_trip, rows_np, size = loaded.graph, host_rows.numpy(), io.batch_size

    def replay() -> None:
        round_trip.replay()
        stream.synchronize()

    ways: list[Callable[[], object]] = [replay]
    if launch_from_cpp:
        graphs = native.CudaGraphs([round_trip.raw_cuda_graph_exec()], stream.cuda_stream, 0)
        # The two ways take turns call by call: a drift of the machine's speed favours neither.
        ways.insert(0, lambda: graphs.launch(0))
    rotation = np.arange(latency_calls * size) % len(samples)  # a different query each call
    latencies: list[list[float]] = [[] for _ in ways]
    # As the harness does for its timed run (run_harness.py): what lives now is out of the
    # collector's sight, so that no full collection walks torch's objects in the middle of the
    # loop (each of query_breakdown's raw runs on an H100 host had one pause of 140-190 ms, about
    # what a full collection with torch loaded takes: 240 ms on the 2-core VM).
    gc.collect()
    gc.freeze()
    with torch.cuda.stream(stream):
        for call in range(len(ways) * latency_calls):
            way = call % len(ways)
            query = call // len(ways)
            rows = rotation[query * size : (query + 1) * size]
            started = time.perf_counter()
            rows_np[:] = rows  # the graph copies them over, and the output back
            ways[way]()
            latencies[way].append(time.perf_counter() - started)
    gc.unfreeze()
    return {
        "engine": str(engine),
        "batch_size": io.batch_size,
        "precision": io.precision,
        "samples_per_second": throughput,
        "replays": count,
        "latency_ms": percentiles_ms(latencies[0]),  # launched from C++ where it was
        "latency_launch": "C++" if launch_from_cpp else "Python",
        "replay_latency_ms": percentiles_ms(latencies[-1]),
        "latency_calls": latency_calls,
    }


def percentiles_ms(latencies: Sequence[float]) -> dict[str, float]:
    """p50, p90 and p99 of `latencies` (seconds) in milliseconds."""
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50": 1e3 * statistics.median(latencies), "p90": 1e3 * cuts[89], "p99": 1e3 * cuts[98]}


def raw_samples(preprocessed_dir: Path) -> npt.NDArray[Any]:
    """The samples the engines are timed on: the first 256 preprocessed fp32 ones (fewer if fewer
    are there); one line and an error where there are none."""
    store = PreprocessedSamples(preprocessed_dir)
    if len(store) == 0:
        raise HarnessError(f"no preprocessed samples in {preprocessed_dir}")
    return store.load(range(min(len(store), 256)), FP32)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The engines' throughput, their latency launched from C++, and (py) replayed from Python."""
    lines = [
        f"{'engine':<14}{'raw samples/s':>15}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}"
        f"{'py p50':>9}{'py p90':>9}{'py p99':>9}"
    ]
    for row in rows:
        latency, replayed = row["latency_ms"], row["replay_latency_ms"]
        lines.append(
            f"{row['precision'] + ' b' + str(row['batch_size']):<14}"
            f"{row['samples_per_second']:>15,.0f}"
            f"{latency['p50']:>9.3f}{latency['p90']:>9.3f}{latency['p99']:>9.3f}"
            f"{replayed['p50']:>9.3f}{replayed['p90']:>9.3f}{replayed['p99']:>9.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="torch_raw", description="The raw speed of torch engines outside the harness."
    )
    parser.add_argument("engines", nargs="+", type=Path, help="torch engines (model.pt2)")
    parser.add_argument(
        "--preprocessed_dir", type=Path, required=True, help="preprocessed fp32 samples"
    )
    parser.add_argument("--seconds", type=positive_float, default=3.0, help="per throughput")
    parser.add_argument("--latency_calls", type=positive_int, default=2000)
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")

    def body() -> int:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        samples = raw_samples(args.preprocessed_dir)
        torch = import_torch()
        rows = [
            measure_engine(
                torch, engine, samples, seconds=args.seconds, latency_calls=args.latency_calls
            )
            for engine in args.engines
        ]
        if args.out:
            # The engines ran on one GPU; "gpus" is how many a harness run of this machine uses.
            figures = {"device": torch.cuda.get_device_name(), "gpus": torch.cuda.device_count()}
            write_json_atomic(args.out, {**figures, "engines": rows})
        print(format_table(rows))
        return 0

    return run_entry_point("torch_raw", body)


if __name__ == "__main__":
    raise SystemExit(main())
