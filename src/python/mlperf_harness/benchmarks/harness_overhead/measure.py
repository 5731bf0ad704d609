"""Before/after figures for the native harness core (docs/performance.md, "The native harness core"), in one process, one run.

  loops    -- each hot loop, the pure-Python version it replaced (python_baseline.py) against the
              native one (src/cpp/harness_native), on the same inputs;
  Offline  -- LoadGen Offline with the null backend over empty samples: samples/s, Python SUT
              against the harness's SUT;
  Server   -- the highest target QPS that stays VALID at p99 <= 15 ms (a search of short LoadGen
              runs) for a do-nothing Python SUT that completes each sample inside issue_queries
              (the ceiling of any Python-driven harness), the Python SUT and the harness's SUT.

`pants run benchmarks/harness_overhead:measure` (flags: --help). Prints tables; nothing is cached.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.benchmarks.harness_overhead import configs, python_baseline
from mlperf_harness.harness.batching import DynamicBatcher, FixedBatches
from mlperf_harness.harness.completion import completion_mode
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.harness.timeline import RecordsTimeline
from mlperf_harness.loadgen.handles import SampleLibrary, query_sample_library, system_under_test
from mlperf_harness.loadgen.native_run import run_test_native
from mlperf_harness.loadgen.paths import PYTHON
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.run import run_test
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario

RESNET50_INT8_SAMPLE_BYTES = 3 * 224 * 224  # 150,528
SERVER_LATENCY_NS = 15_000_000
SAMPLE_COUNT = 1024
MAX_OFFLINE_SAMPLES = 60_000_000  # the largest Offline query offline_run lets LoadGen build


def best_of(repeats: int, run: Callable[[], object]) -> float:
    """The fastest of `repeats` timed calls, in seconds (the least disturbed by other processes)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def row(name: str, before: float, after: float, unit: str, higher_is_better: bool = True) -> str:
    gain = after / before if higher_is_better else before / after
    return f"  {name:<46}{before:>14,.1f}{after:>14,.1f}  {unit:<12}{gain:>6.1f}x"


TABLE_HEAD = f"  {'loop':<46}{'before (Py)':>14}{'after (C++)':>14}  {'unit':<12}{'gain':>7}"


# --- the loops on their own ---------------------------------------------------------------------


def measure_batching(lines: list[str]) -> None:
    count = 262_144
    samples = [lg.QuerySample(i, i % SAMPLE_COUNT) for i in range(count)]

    def python_offline() -> None:
        source = python_baseline.FixedBatches(1024)
        source.put([q.id for q in samples], [q.index for q in samples])
        source.close()
        while source.next_batch() is not None:
            pass

    def native_offline() -> None:
        source = FixedBatches(1024)
        source.put_queries(samples)
        source.close()
        while source.next_batch() is not None:
            pass

    before = count / best_of(3, python_offline)
    after = count / best_of(3, native_offline)
    lines.append(row("Offline: issue 262,144 samples, batches of 1024", before, after, "samples/s"))

    singles = [[q] for q in samples[:65_536]]

    def python_server() -> None:
        source = python_baseline.DynamicBatcher(8, 10.0)
        for query in singles:
            source.put([q.id for q in query], [q.index for q in query])
        source.close()
        while source.next_batch() is not None:
            pass

    def native_server() -> None:
        source = DynamicBatcher(8, 10.0)
        for query in singles:
            source.put_queries(query)
        source.close()
        while source.next_batch() is not None:
            pass

    before = len(singles) / best_of(3, python_server)
    after = len(singles) / best_of(3, native_server)
    lines.append(row("Server: 65,536 one-sample queries, batches of 8", before, after, "queries/s"))

    def timeout_overshoot_us(make: Callable[[], Any]) -> float:
        waits = []
        for i in range(200):
            source = make()
            source.put([i], [i])
            started = time.monotonic()
            source.next_batch()
            waits.append(time.monotonic() - started)
        return (statistics.median(waits) - 500e-6) * 1e6

    before = timeout_overshoot_us(lambda: python_baseline.DynamicBatcher(8, 500e-6))
    after = timeout_overshoot_us(lambda: DynamicBatcher(8, 500e-6))
    lines.append(
        row("Server: 500 us timeout, no load: median lateness", before, after, "us", False)
    )


def measure_completion(lines: list[str]) -> None:
    def discard(responses: list[Any]) -> None:
        pass

    response_type = lg.QuerySampleResponse
    pooled = native.Completer(discard, response_type)
    constructed = native.Completer(discard, response_type, in_place=False)
    for size in (8, 1024):
        ids = list(range(1_000_000, 1_000_000 + size))
        outputs = np.zeros((size, 1), dtype=np.int32)
        batch = native.Batch(ids, ids)
        repeats = max(1, 200_000 // size)

        def python_build(ids: list[int] = ids, outputs: npt.NDArray[np.int32] = outputs) -> None:
            rows = np.ascontiguousarray(outputs).reshape(len(ids), -1)
            row_bytes = rows.shape[1] * rows.itemsize
            base = rows.ctypes.data if row_bytes else 0
            discard(
                [
                    response_type(rid, base + i * row_bytes if row_bytes else 0, row_bytes)
                    for i, rid in enumerate(ids)
                ]
            )

        def loop(call: Callable[[], None], repeats: int = repeats) -> Callable[[], None]:
            def run() -> None:
                for _ in range(repeats):
                    call()

            return run

        total = size * repeats
        before = total / best_of(3, loop(python_build))
        after = total / best_of(3, loop(partial(pooled.complete_batch, batch, outputs)))
        middle = total / best_of(3, loop(partial(constructed.complete_batch, batch, outputs)))
        lines.append(
            row(f"completion: responses of a batch of {size}", before, after, "responses/s")
        )
        lines.append(
            f"  {'  (C++, one constructor call per response)':<46}{'':>14}{middle:>14,.1f}"
            f"  {'responses/s':<12}{middle / before:>6.1f}x"
        )


def measure_gather(lines: list[str]) -> None:
    rng = np.random.default_rng(0)
    data = rng.integers(-128, 128, size=(SAMPLE_COUNT, 3, 224, 224), dtype=np.int8)
    store = PreloadedSampleStore(lambda idx: data[list(idx)], SAMPLE_COUNT, SAMPLE_COUNT)
    one_thread = PreloadedSampleStore(
        lambda idx: data[list(idx)], SAMPLE_COUNT, SAMPLE_COUNT, gather_threads=1
    )
    for each in (store, one_thread):
        each.load(list(range(SAMPLE_COUNT)))
    slot_of = np.arange(SAMPLE_COUNT, dtype=np.int64)
    for batch_size in (64, 256):
        indices = rng.permutation(SAMPLE_COUNT)[:batch_size].tolist()
        gigabytes = batch_size * RESNET50_INT8_SAMPLE_BYTES / 1e9
        source = data[:batch_size].copy()
        target = np.empty_like(source)

        def gbps(call: Callable[[], object], gigabytes: float = gigabytes) -> float:
            call()  # warm: first touch of a fresh buffer

            def twenty() -> None:
                for _ in range(20):
                    call()

            return gigabytes * 20 / best_of(5, twenty)

        before = gbps(partial(python_baseline.gather, data, slot_of, indices))
        after = gbps(partial(store.gather, indices))
        single = gbps(partial(one_thread.gather, indices))
        memcpy = gbps(partial(native.memcpy_into, target, source))
        label = f"gather: {batch_size} ResNet-50 int8 samples"
        lines.append(row(label, before, after, "GB/s"))
        lines.append(
            f"  {'  (C++, one thread)':<46}{'':>14}{single:>14,.1f}  {'GB/s':<12}"
            f"{single / before:>6.1f}x"
        )
        lines.append(
            f"  {'  plain memcpy of the same bytes (reference)':<46}{'':>14}{memcpy:>14,.1f}"
            f"  {'GB/s':<12}"
        )
        lines.append(f"  {'  native gather / memcpy':<46}{'':>14}{after / memcpy:>14.0%}")


def measure_quantize(lines: list[str]) -> None:
    rng = np.random.default_rng(1)
    images = rng.uniform(-140, 160, size=(16, 3, 224, 224)).astype(np.float32)
    expected = python_baseline.quantize_int8_linear(images)
    if not np.array_equal(native.quantize_int8_linear(images), expected):
        raise SystemExit("measure: native int8 quantization differs from numpy's")
    repeats = 20

    def per_second(call: Callable[[], object]) -> float:
        def run() -> None:
            for _ in range(repeats):
                call()

        return len(images) * repeats / best_of(3, run)

    before = per_second(lambda: python_baseline.quantize_int8_linear(images))
    after = per_second(lambda: native.quantize_int8_linear(images))
    lines.append(row("int8 quantize: 3x224x224 fp32 images", before, after, "images/s"))


# --- LoadGen, null backend ------------------------------------------------------------------------


@dataclass(frozen=True)
class Contender:
    name: str
    # (scenario) -> issue callback, flush callback, start, stop
    make: Callable[[Scenario], tuple[Callable[[Sequence[Any]], None], Callable[[], None], Any]]


def _batch_source(scenario: Scenario) -> Any:
    """The harness_overhead config's batch source for `scenario`."""
    if scenario is Scenario.SERVER:
        timeout_s = (configs.Server.server_batch_timeout_us or 0) / 1e6
        return DynamicBatcher(configs.Server.batch_size or 1, timeout_s)
    return FixedBatches(configs.Offline.batch_size or 1)


def _harness(
    scenario: Scenario, loadgen_path: str = PYTHON
) -> tuple[Callable[[Sequence[Any]], None], Callable[[], None], Any]:
    batches = _batch_source(scenario)
    sut = HarnessSUT(
        [NullRunner()],
        EmptySampleStore(SAMPLE_COUNT, SAMPLE_COUNT),
        batches,
        hold_queries=scenario is Scenario.OFFLINE,  # as run_harness runs Offline
        loadgen_path=loadgen_path,
    )
    return sut.issue_queries, sut.flush_queries, sut


class _PythonSUTContext:
    def __init__(self, sut: python_baseline.PythonSUT) -> None:
        self.sut = sut

    def __enter__(self) -> None:
        self.sut.start()

    def __exit__(self, *exc: object) -> None:
        self.sut.stop()


def _python(scenario: Scenario) -> tuple[Callable[[Sequence[Any]], None], Callable[[], None], Any]:
    if scenario is Scenario.SERVER:
        timeout_s = (configs.Server.server_batch_timeout_us or 0) / 1e6
        batches: python_baseline.BatchSource = python_baseline.DynamicBatcher(
            configs.Server.batch_size or 1, timeout_s
        )
    else:
        batches = python_baseline.FixedBatches(configs.Offline.batch_size or 1)
    sut = python_baseline.PythonSUT(
        NullRunner(), EmptySampleStore(SAMPLE_COUNT, SAMPLE_COUNT), batches
    )
    return sut.issue_queries, sut.flush_queries, _PythonSUTContext(sut)


class _Nothing:
    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


def _do_nothing(
    scenario: Scenario,
) -> tuple[Callable[[Sequence[Any]], None], Callable[[], None], Any]:
    response = lg.QuerySampleResponse
    complete = lg.QuerySamplesComplete

    def issue_queries(query_samples: Sequence[Any]) -> None:
        complete([response(q.id, 0, 0) for q in query_samples])

    return issue_queries, lambda: None, _Nothing()


class _CppWorkers:
    """The native LoadGen path over the harness_overhead config's batch source, its batches
    answered by C++ threads (native.NullCompleters) instead of the harness's Python workers."""

    def __init__(self, scenario: Scenario) -> None:
        self.batches = _batch_source(scenario)
        self._completers: native.NullCompleters | None = None

    def __enter__(self) -> None:
        self._completers = native.NullCompleters(self.batches, 1)  # one, as worker_count = 1

    def __exit__(self, *exc: object) -> None:
        self.batches.close()
        if self._completers is not None:
            self._completers.join()


def _cpp_workers(
    scenario: Scenario,
) -> tuple[Callable[[Sequence[Any]], None], Callable[[], None], Any]:
    def not_called(_query_samples: Sequence[Any]) -> None:
        raise AssertionError("the native LoadGen issues to the batch source in C++")

    return not_called, lambda: None, _CppWorkers(scenario)


CEILING = Contender("do-nothing Python SUT (ceiling)", _do_nothing)
BEFORE = Contender("harness before (Python loops)", _python)
AFTER = Contender("harness after (native core)", _harness)
# The native path with C++ workers: LoadGen's C++ and our batch source with no Python per batch,
# what the harness's Python worker could reach at best on this CPU (its share is the difference).
CPP_WORKERS = Contender("native LoadGen path, C++ null workers", _cpp_workers)


def harness_contender(loadgen_path: str) -> Contender:
    """The harness with the null backend under the LoadGen `loadgen_path` names."""
    if loadgen_path == PYTHON:
        return AFTER
    return Contender(
        f"harness, {loadgen_path} LoadGen path", partial(_harness, loadgen_path=loadgen_path)
    )


@dataclass(frozen=True)
class Timed:
    result: LoadgenResult
    # From the call that starts the test to the harness's batch source receiving the first sample:
    # LoadGen's own work before the harness sees anything (None for a SUT without a timeline).
    prelude_s: float | None
    issued_samples: int = 0  # what the SUT's batch source received (0 without a timeline)


def run_timed(contender: Contender, settings: LoadgenSettings, log_root: Path) -> Timed:
    issue, flush, context = contender.make(settings.scenario)
    log_dir = Path(tempfile.mkdtemp(dir=log_root))
    qsl = SampleLibrary(SAMPLE_COUNT, SAMPLE_COUNT, lambda _: None, lambda _: None)
    with context:
        # As run_harness does: an earlier run's garbage collected, and what lives now out of the
        # collector's sight during the timed run.
        gc.collect()
        gc.freeze()
        try:
            started_ns = time.monotonic_ns()
            if isinstance(context, HarnessSUT):
                result = run_under_loadgen(context, qsl, settings, log_dir)
            elif isinstance(context, _CppWorkers):
                result = run_test_native(context.batches, qsl, settings, log_dir)
            else:
                with (
                    system_under_test(issue, flush) as sut,
                    query_sample_library(
                        qsl.total_count, qsl.performance_count, qsl.load, qsl.unload
                    ) as qsl_handle,
                ):
                    result = run_test(sut, qsl_handle, settings, log_dir)
        finally:
            gc.unfreeze()
    source = context.batches if isinstance(context, HarnessSUT | _CppWorkers) else None
    if not isinstance(source, RecordsTimeline):
        return Timed(result, None)
    timeline = source.timeline()
    first = int(timeline.get("first_issue_ns", 0))
    # The batch source's clock is the steady clock, CLOCK_MONOTONIC: time.monotonic_ns's.
    prelude = (first - started_ns) / 1e9 if first else None
    return Timed(result, prelude, int(timeline.get("issued_samples", 0)))


def run_once(contender: Contender, settings: LoadgenSettings, log_root: Path) -> LoadgenResult:
    return run_timed(contender, settings, log_root).result


def offline_run(contender: Contender, seconds: float, log_root: Path) -> Timed:
    def settings(expected: float, duration_s: float) -> LoadgenSettings:
        return LoadgenSettings(
            model=configs.NAME,
            scenario=Scenario.OFFLINE,
            min_duration_ms=int(duration_s * 1000),
            min_query_count=1,
            offline_expected_qps=expected,
        )

    # A short run sizes the real one: LoadGen issues expected QPS x duration x 1.1 samples, which
    # must last past the minimum duration for a VALID result. A short probe understates a fast
    # SUT (its fixed start-up weighs more): a run that ends too soon is sized again from its own
    # rate, twice at most. LoadGen holds every sample of the query (~100 B each): the query is
    # capped at MAX_OFFLINE_SAMPLES, past which a run stays INVALID but its rate is still shown.
    def expected(rate: float) -> float:
        return min(1.2 * rate, MAX_OFFLINE_SAMPLES / (1.1 * seconds))

    probe = run_once(contender, settings(200_000, 1.0), log_root).samples_per_second or 1.0
    timed = run_timed(contender, settings(expected(probe), seconds), log_root)
    for _ in range(2):
        rate = timed.result.samples_per_second or 0.0
        if timed.result.valid or expected(rate) <= expected(probe):
            break
        probe = rate
        timed = run_timed(contender, settings(expected(rate), seconds), log_root)
    return timed


def offline_rate(contender: Contender, seconds: float, log_root: Path) -> tuple[float, bool]:
    result = offline_run(contender, seconds, log_root).result
    return result.samples_per_second or 0.0, bool(result.valid)


def server_valid(contender: Contender, qps: float, seconds: float, log_root: Path) -> bool:
    settings = LoadgenSettings(
        model=configs.NAME,
        scenario=Scenario.SERVER,
        min_duration_ms=int(seconds * 1000),
        min_query_count=1,
        server_target_qps=qps,
        server_target_latency_ns=SERVER_LATENCY_NS,
    )
    result = run_once(contender, settings, log_root)
    p99 = result.latency_ns.get("p99", 0)
    return bool(result.valid) and p99 <= SERVER_LATENCY_NS


def highest_valid_qps(
    contender: Contender, seconds: float, precision: float, log_root: Path, start: float
) -> tuple[float, list[str]]:
    """Double from `start` until a run is INVALID, then bisect (geometrically) to `precision`."""
    trail: list[str] = []

    def check(qps: float) -> bool:
        ok = server_valid(contender, qps, seconds, log_root)
        trail.append(f"{qps:,.0f} {'VALID' if ok else 'INVALID'}")
        return ok

    low, high = 0.0, start
    while check(high):
        low, high = high, high * 2
    if low == 0.0:
        low = high / 8
        while not check(low) and low > 100:
            high, low = low, low / 2
    while high / low > 1 + precision:
        middle = (low * high) ** 0.5
        if check(middle):
            low = middle
        else:
            high = middle
    return low, trail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="measure", description=__doc__)
    parser.add_argument("--skip_loops", action="store_true", help="no per-loop figures")
    parser.add_argument("--skip_loadgen", action="store_true", help="no LoadGen runs")
    parser.add_argument("--offline_seconds", type=float, default=5.0)
    parser.add_argument("--server_seconds", type=float, default=5.0, help="length of each run")
    parser.add_argument("--precision", type=float, default=0.05, help="Server search precision")
    parser.add_argument("--server_start_qps", type=float, default=8000.0)
    args = parser.parse_args(argv)
    print(
        f"native core: {native.gather_threads()} gather threads, completion {completion_mode()}; "
        f"Offline batch {configs.Offline.batch_size}, Server batch {configs.Server.batch_size} "
        f"with a {configs.Server.server_batch_timeout_us} us timeout",
        flush=True,
    )
    if not args.skip_loops:
        lines = [TABLE_HEAD]
        measure_batching(lines)
        measure_completion(lines)
        measure_gather(lines)
        measure_quantize(lines)
        print("\n".join(lines), flush=True)
    if args.skip_loadgen:
        return 0
    with tempfile.TemporaryDirectory() as logs:
        log_root = Path(logs)
        print(f"\nLoadGen Offline, null backend, {args.offline_seconds:g} s runs", flush=True)
        offline: dict[str, float] = {}
        for contender in (BEFORE, AFTER):
            rate, valid = offline_rate(contender, args.offline_seconds, log_root)
            offline[contender.name] = rate
            verdict = "VALID" if valid else "INVALID"
            print(f"  {contender.name:<36}{rate:>14,.0f} samples/s  ({verdict})", flush=True)
        print(f"  after / before: {offline[AFTER.name] / offline[BEFORE.name]:.2f}x", flush=True)
        print(
            f"\nLoadGen Server, null backend: highest target QPS VALID at p99 <= 15 ms "
            f"({args.server_seconds:g} s runs, search to {args.precision:.0%})",
            flush=True,
        )
        server: dict[str, float] = {}
        for contender in (CEILING, BEFORE, AFTER):
            qps, trail = highest_valid_qps(
                contender, args.server_seconds, args.precision, log_root, args.server_start_qps
            )
            server[contender.name] = qps
            print(f"  {contender.name:<36}{qps:>14,.0f} QPS   [{'; '.join(trail)}]", flush=True)
        ceiling = server[CEILING.name]
        print(
            f"  harness after / ceiling: {server[AFTER.name] / ceiling:.0%}; "
            f"before / ceiling: {server[BEFORE.name] / ceiling:.0%}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
