"""A decoder engine's run split by call (engines/call_split.py): each prefill, advance and
candidates call bracketed by two marks, the intervals summed per kind and the rest of the run's
wall time called idle; the decoded tokens unchanged by the wrapper. A tiny random GPT-J graph on
ONNX Runtime; the GPU's marks (CUDA events) are not run here."""

from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, gptj_model, random_weights
from mlperf_harness.engines.call_split import HostMarks, SplitEngine
from mlperf_harness.generation.beams import GenerationConfig
from mlperf_harness.generation.scheduler import generate
from mlperf_harness.generation.step_engine import StepModelEngine

TINY = GptjShape(
    layers=2, hidden=32, heads=4, rotary_dim=4, vocab_size=40, inner=64, max_positions=256
)
EOS = 39
CONFIG = GenerationConfig(EOS, 3, 9, 2)
_rng = np.random.default_rng(4)
PROMPTS = [_rng.integers(0, EOS, size=int(n)).astype(np.int64) for n in (5, 11, 2, 8, 3)]


def _engine() -> StepModelEngine:
    session = OrtGptj(gptj_model(random_weights(TINY, 6), TINY).SerializeToString(), TINY)
    return StepModelEngine(session, EOS, slots=2, beams=2, max_length=64)


class Ticks:
    """A clock that moves one second at each mark: every call's interval is exactly 1 s."""

    def __init__(self) -> None:
        self.now = 0.0

    def mark(self) -> float:
        self.now += 0.5
        return self.now

    def seconds(self, start: float, end: float) -> float:
        return 2 * (end - start)


def test_each_call_is_counted_and_the_rest_is_idle() -> None:
    split = SplitEngine(_engine(), Ticks())
    got = generate(split, PROMPTS, CONFIG)
    assert got == generate(_engine(), PROMPTS, CONFIG)  # the wrapper changes nothing decoded
    calls = split.calls()
    assert split.prompts == len(PROMPTS)
    assert 1 <= calls["prefill"] <= len(PROMPTS)
    assert 0 < calls["advance"] <= calls["candidates"]
    seconds = split.split(wall_seconds=1000.0)
    assert {k: seconds[k] for k in calls} == {k: float(n) for k, n in calls.items()}
    assert seconds["idle"] == 1000.0 - sum(calls.values())


def test_on_the_host_clock_the_intervals_fit_in_the_run() -> None:
    import time

    split = SplitEngine(_engine(), HostMarks())
    started = time.perf_counter()
    generate(split, PROMPTS, CONFIG)
    wall = time.perf_counter() - started
    seconds = split.split(wall)
    assert all(seconds[k] > 0 for k in ("prefill", "advance", "candidates"))
    assert 0 <= seconds["idle"] < wall
