"""What the torch runner's Python costs a query, on any host with torch (the CPU build will do).

A latency query spends most of what the harness adds to the engine on the host (query_breakdown.py
on an H100 host; docs/performance.md). This measures the part that is the runner's own code: one
`TorchRunner.infer_samples` call per query, from LoadGen's sample indices to the output rows, with
the three GPU calls of a round trip (its graph's replay, the stream's synchronisation, the device
binding) stood in for by calls that do nothing (`NoGpuGraph`, `NoGpuStream`, `NO_GPU_TORCH`). The
runner's buffers are ordinary CPU tensors; everything else is the product's code.

    python -m mlperf_harness.benchmarks.resnet50.runner_python_cost [--queries N]

Prints the microseconds of a call at p50, p90 and p99 for batches of 1 and 8 (SingleStream and
MultiStream). Its stand-in graphs can also compute something (each output row ten times its
sample's row), against which tests check the runner's batching, and its C++ answer to latency
queries (bind_inline_without_gpu).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.backends.torch_cuda.runner import DeviceSamples, Engine, TorchRunner
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.harness.sample_store import EmptySampleStore

SAMPLES = 1024  # loaded samples; sample index i sits in row SAMPLES - 1 - i of the GPU's copy


class NoGpuCuda:
    """torch.cuda's device binding, which a worker thread makes once (runner.bind_thread)."""

    @staticmethod
    def set_device(_index: int) -> None:
        pass

    @staticmethod
    def set_stream(_stream: Any) -> None:
        pass


NO_GPU_TORCH = SimpleNamespace(cuda=NoGpuCuda)


class NoGpuStream:
    """The runner's compute stream: nothing to wait for."""

    def synchronize(self) -> None:
        pass


class NoGpuGraph:
    """An engine's round trip graph (runner.capture_round_trips), replayed on the CPU: nothing, as
    timed; or, `computing`, the output rows of its batch made ten times the rows written for it,
    which tests check (a numpy call of about 2 us on the 2-core VM)."""

    def __init__(self, batch_size: int, host_rows: Any, host_out: Any, computing: bool) -> None:
        self._rows = host_rows[:batch_size].numpy()
        self._out = host_out[:batch_size, 0].numpy()
        self._computing = computing

    def replay(self) -> None:
        if self._computing:
            np.multiply(self._rows, 10, out=self._out)


class LoadedSamples(EmptySampleStore):
    """A store whose every sample is loaded, in reverse order (rows differ from indices); with
    `unloaded`, the first that many are not (their row is -1). The runner reads only its rows."""

    def __init__(self, unloaded: int = 0) -> None:
        super().__init__(SAMPLES, SAMPLES)
        self.slots = np.arange(SAMPLES - 1, -1, -1, dtype=np.int64)
        self.slots[:unloaded] = -1

    def loaded_samples(self) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.int64]]:
        return np.zeros((SAMPLES, 1), dtype=np.float32), self.slots


def runner_without_gpu(batch_sizes: Sequence[int], *, computing: bool = False) -> TorchRunner:
    """A TorchRunner of engines of `batch_sizes` as activate() and samples_loaded() leave it with
    start_from_device, round trips captured, save that its GPU calls do nothing (NoGpuGraph says
    what `computing` does)."""
    torch = import_torch()
    largest = max(batch_sizes)
    samples = DeviceSamples(0)
    samples.data = torch.zeros(SAMPLES, 1)
    runner = TorchRunner([Path("stand-in")], device_samples=samples)
    buffers = {
        "gpu_in": torch.zeros(largest, 1),
        "host_in": torch.zeros(largest, 1),
        "host_rows": torch.zeros(largest, dtype=torch.int64),
        "gpu_rows": torch.zeros(largest, dtype=torch.int64),
        "host_out": torch.full((largest, 1), -1, dtype=torch.int64),
    }
    host_rows, host_out = buffers["host_rows"], buffers["host_out"]
    engines = [
        Engine(size, None, NoGpuGraph(size, host_rows, host_out, computing), host_out[:size])
        for size in sorted(batch_sizes)
    ]
    runner._torch, runner._buffers, runner._compute = NO_GPU_TORCH, buffers, NoGpuStream()
    runner._io = SimpleNamespace(batch_size=largest)  # type: ignore[assignment]
    runner._engines, runner._round_trips = engines, engines
    return runner


def bind_inline_without_gpu(
    runner: TorchRunner, store: LoadedSamples, label_offset: int
) -> native.InlineRoundTrips:
    """The runner's C++ answer (inline_round_trips) bound to its stand-in round trips and `store`'s
    rows, as samples_loaded binds it; the C++ launches a graph by replaying its stand-in (a Python
    call, with the GIL) where the GPU would launch the captured graph."""
    inline = runner.inline_round_trips(label_offset)
    assert inline is not None

    def replay_stand_in(trips: Sequence[Engine]) -> Callable[[int], None]:
        return lambda position: trips[position].graph.replay()

    runner._launch_for = replay_stand_in  # type: ignore[method-assign]
    runner._bind_inline(store.slots)
    return inline


def call_microseconds(runner: TorchRunner, batch: int, queries: int) -> list[float]:
    """Each of `queries` infer_samples calls of `batch` random samples, in microseconds, with the
    collector frozen as in a timed harness run."""
    store = LoadedSamples()
    rng = np.random.default_rng(0)
    batches = [[int(i) for i in rng.integers(0, SAMPLES, batch)] for _ in range(queries)]
    for indices in batches[:1000]:  # views made, code warm
        runner.infer_samples(store, indices)
    gc.collect()
    gc.freeze()
    try:
        times = []
        for indices in batches:
            started = time.perf_counter_ns()
            runner.infer_samples(store, indices)
            times.append((time.perf_counter_ns() - started) / 1e3)
    finally:
        gc.unfreeze()
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="runner_python_cost", description="What the torch runner's Python costs a query."
    )
    parser.add_argument("--queries", type=positive_int, default=50_000, help="calls per batch size")

    def body() -> int:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        print("batch    p50 us    p90 us    p99 us   (infer_samples, GPU calls stood in for)")
        for batch in (1, 8):
            times = call_microseconds(runner_without_gpu([batch]), batch, args.queries)
            cuts = statistics.quantiles(times, n=100)
            print(f"{batch:>5}  {statistics.median(times):8.2f}  {cuts[89]:8.2f}  {cuts[98]:8.2f}")
        return 0

    return run_entry_point("runner_python_cost", body)


if __name__ == "__main__":
    raise SystemExit(main())
