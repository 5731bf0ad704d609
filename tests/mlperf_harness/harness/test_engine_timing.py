"""The engine timed through runners before LoadGen starts: every runner side by side, real calls."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.generation.runner import GenerationRunner
from mlperf_harness.harness.engine_timing import EngineTiming, time_engine
from mlperf_harness.harness.sample_store import EmptySampleStore, SampleStore


class RecordingRunner(NullRunner):
    """The null runner, noting which samples each call asked for and on which thread."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []
        self.threads: set[str] = set()

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        self.calls.append(list(indices))
        self.threads.add(threading.current_thread().name)
        return super().infer_samples(store, indices)


class BrokenRunner(NullRunner):
    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        raise ValueError("the engine fell over")


def test_every_runner_is_timed_in_a_thread_of_its_own_on_the_given_samples() -> None:
    runners = [RecordingRunner(), RecordingRunner()]
    timing = time_engine(runners, EmptySampleStore(8, 8), [0, 1, 2, 3, 4], 2, seconds=0.05)
    assert timing.runners == 2 and timing.batch_size == 2
    assert timing.calls == sum(len(runner.calls) for runner in runners)
    for runner in runners:
        assert len(runner.calls) >= 3  # a runner's min_timed_calls, however short the time
        assert len(runner.threads) == 1 and not runner.threads & {"MainThread"}
        # Batches of 2 taken in turn over the 5 samples (wrapping round), every one of them.
        assert all(len(call) == 2 for call in runner.calls)
        assert {index for call in runner.calls for index in call} == {0, 1, 2, 3, 4}
    assert runners[0].threads != runners[1].threads
    assert list(timing.latencies_ns) == sorted(timing.latencies_ns)
    assert timing.seconds > 0


def test_a_slow_engine_still_gets_its_minimum_calls() -> None:
    runner = RecordingRunner()
    timing = time_engine([runner], EmptySampleStore(4, 4), [0, 1], 1, seconds=0.0, min_calls=5)
    assert timing.calls == len(runner.calls) == 5


def test_a_generation_runner_is_timed_by_one_call_however_long() -> None:
    # A generative engine's call is its slots' samples generated to their end (a minute for
    # Llama2-70B on an H200): one such call is the whole timing once the time is up.
    assert GenerationRunner.min_timed_calls == 1

    class OneCallRunner(RecordingRunner):
        min_timed_calls = GenerationRunner.min_timed_calls

    runner = OneCallRunner()
    timing = time_engine([runner], EmptySampleStore(4, 4), [0, 1], 1, seconds=0.0)
    assert timing.calls == len(runner.calls) == 1
    assert (
        time_engine([RecordingRunner()], EmptySampleStore(4, 4), [0, 1], 1, seconds=0.0).calls == 3
    )


def test_a_runner_failure_is_raised_in_the_caller() -> None:
    with pytest.raises(ValueError, match="the engine fell over"):
        time_engine([NullRunner(), BrokenRunner()], EmptySampleStore(4, 4), [0, 1], 1, seconds=0.01)


def test_rates_and_percentiles_from_the_calls() -> None:
    # Four calls of 10 samples on 2 runners: 40 samples in 0.5 s; the fastest call 20 ms.
    timing = EngineTiming(
        batch_size=10,
        runners=2,
        seconds=0.5,
        latencies_ns=(20_000_000, 30_000_000, 40_000_000, 50_000_000),
    )
    assert timing.samples_per_second == pytest.approx(80.0)
    assert timing.peak_samples_per_second == pytest.approx(1000.0)  # 2 x 10 samples / 20 ms
    assert timing.latency_ns(0.0) == 20_000_000
    assert timing.latency_ns(0.5) == 30_000_000
    assert timing.latency_ns(0.99) == 50_000_000
    record = timing.to_json()
    assert record["calls"] == 4 and record["latency_ms"] == {"min": 20.0, "p50": 30.0, "p99": 50.0}


def test_nothing_to_time_is_refused() -> None:
    runner: Runner = NullRunner()
    with pytest.raises(Exception, match="at least one runner, sample and batch"):
        time_engine([runner], EmptySampleStore(4, 4), [], 1)
