"""How fast this run's engine is on this machine, timed through the run's own runners just before
LoadGen starts (config/measured_rates.py turns the timing into LoadGen's expected rates).

Each runner times calls of one batch size on real samples, side by side with the others in a thread
of its own (as the harness's workers run them), for a few seconds: the calls' latencies and the
samples all of them finished per second are what LoadGen's settings are derived from.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

TIMING_SECONDS = 3.0  # long enough for a steady rate, short beside any LoadGen run


@dataclass(frozen=True)
class EngineTiming:
    batch_size: int  # samples in each timed call
    runners: int  # runners timed side by side
    seconds: float  # from the first call's start to the last call's end
    latencies_ns: tuple[int, ...]  # every call's, sorted

    @property
    def calls(self) -> int:
        return len(self.latencies_ns)

    @property
    def samples_per_second(self) -> float:
        """The samples every runner together finished per second."""
        return self.calls * self.batch_size / self.seconds

    @property
    def peak_samples_per_second(self) -> float:
        """Every runner at its fastest call's pace: what this engine can do at best here, little
        moved by another process that held a core for part of the timing."""
        return self.runners * self.batch_size * 1e9 / self.latencies_ns[0]

    def latency_ns(self, fraction: float) -> int:
        """The calls' latency at `fraction` (0: the fastest call, 0.99: p99), nearest rank."""
        index = min(
            len(self.latencies_ns) - 1, max(0, round(fraction * len(self.latencies_ns)) - 1)
        )
        return self.latencies_ns[index]

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "runners": self.runners,
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "samples_per_second": round(self.samples_per_second, 3),
            "peak_samples_per_second": round(self.peak_samples_per_second, 3),
            "latency_ms": {
                name: round(self.latency_ns(fraction) / 1e6, 4)
                for name, fraction in (("min", 0.0), ("p50", 0.5), ("p99", 0.99))
            },
        }


def time_engine(
    runners: Sequence[Runner],
    store: SampleStore,
    indices: Sequence[int],
    batch_size: int,
    *,
    seconds: float = TIMING_SECONDS,
    min_calls: int | None = None,
) -> EngineTiming:
    """Time calls of `batch_size` of the samples at `indices` (loaded in `store`, taken in turn)
    on every runner at once, each in its own thread, for `seconds` and at least `min_calls` each
    (None: the runners' own `min_timed_calls`)."""
    if not runners or not indices or batch_size < 1:
        raise HarnessError("the engine timing needs at least one runner, sample and batch")
    batches = [
        [indices[(start + offset) % len(indices)] for offset in range(batch_size)]
        for start in range(0, len(indices), batch_size)
    ]
    latencies: list[list[int]] = [[] for _ in runners]
    ends = [0] * len(runners)
    failures: list[BaseException] = []
    ready = threading.Barrier(len(runners) + 1)
    start_ns = [0]

    def time_one(lane: int, runner: Runner) -> None:
        ready.wait()
        mine = latencies[lane]
        least = runner.min_timed_calls if min_calls is None else min_calls
        deadline = start_ns[0] + int(seconds * 1e9)
        call = lane  # runners start on different batches, as the harness's workers would
        try:
            while True:
                begin = time.perf_counter_ns()
                runner.infer_samples(store, batches[call % len(batches)])
                end = time.perf_counter_ns()
                mine.append(end - begin)
                call += 1
                if end >= deadline and len(mine) >= least:
                    ends[lane] = end
                    return
        except BaseException as error:  # re-raised in the caller's thread
            failures.append(error)

    threads = [
        threading.Thread(target=time_one, args=(lane, runner), name=f"engine-timing-{lane}")
        for lane, runner in enumerate(runners)
    ]
    for thread in threads:
        thread.start()
    start_ns[0] = time.perf_counter_ns()
    ready.wait()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return EngineTiming(
        batch_size=batch_size,
        runners=len(runners),
        seconds=(max(ends) - start_ns[0]) / 1e9,
        latencies_ns=tuple(sorted(latency for lane in latencies for latency in lane)),
    )
