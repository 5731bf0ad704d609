"""What every benchmark's torch_raw measures the same way: runners driven directly (no LoadGen, no
harness), one thread per runner as the harness has, over one shuffled pass of the loaded samples;
and percentiles of per-call times."""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions, create_runners
from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.run_harness import (
    RunPlan,
    plan_run,
    run_backend_options,
    unique_runners,
    wrapped_runners,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import FixedBatches
from mlperf_harness.harness.sample_store import SampleStore

SEED = 0


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values_ms)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "mean": statistics.fmean(ordered)}


def length_ordered_batches(
    order: npt.NDArray[np.int64], batch: int, lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The batches the harness cuts an Offline query into in length order (FixedBatches with the
    lengths as order keys): the query is `order` repeated until it fills whole batches (each
    sample as often); the batches [count, batch] in a seeded shuffle, so that a timing cut short by
    its seconds still takes short and long batches alike."""
    query = np.tile(order, batch // math.gcd(len(order), batch))
    source = FixedBatches(batch, lengths)
    source.put(np.arange(len(query)), query)
    source.close()
    rows = np.array([b.sample_indices for b in iter(source.next_batch, None)], np.int64)
    shuffled: npt.NDArray[np.int64] = rows[np.random.default_rng(SEED).permutation(len(rows))]
    return shuffled


@dataclass(frozen=True)
class DrivenCalls:
    samples: int  # given to the runners, all of them answered
    seconds: float  # from the first thread's start to the last one's end
    calls_ms: list[float]  # each call's time on the host


def drive_runners(
    runners: Sequence[Runner], store: SampleStore, next_batch: Callable[[], list[int] | None]
) -> DrivenCalls:
    """Every runner on its own thread, as the harness has them, calling `infer_samples` on the
    batches `next_batch` hands out (under one lock, so each batch goes to one runner) until it
    says None."""
    lock = threading.Lock()
    done, calls = [0], []

    def work(runner: Runner) -> None:
        while True:
            with lock:
                chosen = next_batch()
            if chosen is None:
                return
            began = time.perf_counter()
            runner.infer_samples(store, chosen)
            elapsed = time.perf_counter() - began
            with lock:
                done[0] += len(chosen)
                calls.append(elapsed * 1e3)

    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(runner,)) for runner in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return DrivenCalls(done[0], time.perf_counter() - started, calls)


# Every timed pass first drives its runners this long untimed: a runner that captures a CUDA graph
# the first time it meets a batch shape (DLRM-v2's pair-count buckets) would count the captures
# as its speed. DLRM-v2's raw phase timed 23,179 samples/s unwarmed where the same runners did
# 33,527 warmed, in one process (2026-11-30, one H200).
WARM_SECONDS = 2.0


def runner_throughput(
    runners: Sequence[Runner],
    store: SampleStore,
    indices: Sequence[int],
    batch: int,
    seconds: float,
    lengths: npt.NDArray[np.int64] | None = None,
    warm_seconds: float = WARM_SECONDS,
) -> dict[str, Any]:
    """Samples per second with every runner on its own thread taking the next `batch` samples of
    one seeded shuffle of `indices` (wrapping around) until `seconds` have passed, after
    `warm_seconds` of the same untimed; and the percentiles of the timed calls' times. With
    `lengths` (per sample index), the batches of an Offline query in length order instead
    (length_ordered_batches), taken in turn."""
    order = np.random.default_rng(SEED).permutation(np.asarray(indices))
    ordered = None if lengths is None else length_ordered_batches(order, batch, lengths)
    position = [0]

    def batches_for(pass_seconds: float) -> Callable[[], list[int] | None]:
        deadline = time.perf_counter() + pass_seconds

        def next_batch() -> list[int] | None:
            if time.perf_counter() >= deadline:
                return None
            start, row = position[0] % len(order), position[0] // batch
            position[0] += batch
            if ordered is None:
                return [int(i) for i in np.resize(np.roll(order, -start), batch)]
            return [int(i) for i in ordered[row % len(ordered)]]

        return next_batch

    if warm_seconds > 0:
        drive_runners(runners, store, batches_for(warm_seconds))
    driven = drive_runners(runners, store, batches_for(seconds))
    return {
        "samples_per_second": driven.samples / driven.seconds,
        "latency_ms": percentiles(driven.calls_ms),
    }


# LoadGen's Offline query: the expected rate times the minimum duration, and a tenth more
OFFLINE_QUERY_MARGIN = 1.1


def offline_query_samples(samples_per_second: float, seconds: float) -> int:
    """How many samples LoadGen's one Offline query holds for a run of `seconds` told to expect
    `samples_per_second`."""
    # less a hair: 1.1 x 100 x 0.5 is 55.000000000000007 in floating point, 55 samples
    return max(1, math.ceil(OFFLINE_QUERY_MARGIN * samples_per_second * seconds - 1e-9))


def whole_query_throughput(
    runners: Sequence[Runner],
    store: SampleStore,
    indices: Sequence[int],
    batch: int,
    samples: int,
    lengths: npt.NDArray[np.int64] | None = None,
) -> dict[str, Any]:
    """The engine alone on an Offline run's own work: one query of `samples` samples (the loaded
    ones in a seeded shuffle, repeated, as LoadGen issues them) cut as the harness cuts it
    (FixedBatches; with `lengths`, in length order) and taken in that order, each batch once, by
    every runner on its own thread until none is left: samples/s over the whole query, its ramp
    and drain included, as a harness run's figure includes them."""
    order = np.random.default_rng(SEED).permutation(np.asarray(indices))
    source = FixedBatches(batch, lengths)
    source.put(np.arange(samples), np.resize(order, samples))
    source.close()
    rows = [b.sample_indices for b in iter(source.next_batch, None)]
    taken = iter(rows)
    driven = drive_runners(runners, store, lambda: next(taken, None))
    return {
        "samples": driven.samples,
        "batches": len(rows),
        "seconds": round(driven.seconds, 3),
        "samples_per_second": driven.samples / driven.seconds,
        "latency_ms": percentiles(driven.calls_ms),
    }


def single_sample_latency(
    runner: Runner, store: SampleStore, indices: Sequence[int], calls: int
) -> dict[str, Any]:
    """One runner, one random sample per call, timed on the host: a SingleStream query's least."""
    rng = np.random.default_rng(SEED)
    times = []
    for _ in range(calls):
        chosen = [int(rng.choice(np.asarray(indices)))]
        began = time.perf_counter()
        runner.infer_samples(store, chosen)
        times.append((time.perf_counter() - began) * 1e3)
    result = percentiles(times)
    return {"samples_per_second": 1e3 / result["mean"], "latency_ms": result}


@dataclass(frozen=True)
class LoadedRunners:
    """A run's runners, active, with every performance sample loaded as LoadGen would load them."""

    plan: RunPlan
    options: BackendOptions
    runners: list[Runner]
    store: SampleStore
    indices: list[int]


@contextlib.contextmanager
def loaded_runners(
    benchmark: Benchmark,
    run_flags: Sequence[str],
    prog: str,
    backends: tuple[str, ...] = ("torch",),
) -> Iterator[LoadedRunners]:
    """The runners of the run `run_flags` describe (the run targets' flags; its backend one of
    `backends`), made, activated and given the loaded samples exactly as the harness does; all
    undone on exit."""
    plan = plan_run(benchmark, benchmark.parse_options(list(run_flags), prog))
    if plan.backend not in backends:
        raise HarnessError(
            f"{prog} measures the {' or '.join(backends)} backend, this run resolved {plan.backend}"
        )
    options = run_backend_options(plan)
    runners = unique_runners(wrapped_runners(create_runners(plan.backend, options), plan.prepared))
    store = plan.prepared.store
    indices = list(range(store.performance_count))
    active: list[Runner] = []
    try:
        for runner in runners:
            runner.activate()
            active.append(runner)
        store.load(indices)
        for runner in runners:
            runner.samples_loaded(store)
        yield LoadedRunners(plan, options, runners, store, indices)
    finally:
        store.unload(indices)
        for runner in active:
            runner.deactivate()
