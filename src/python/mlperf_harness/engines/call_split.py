"""A decoder engine's run split by call on the device's own clock: how much of the run's time the
GPU spent in prefill, in the decode step (`advance`) and in `candidates` (the beams' top k on the
GPU and its read-back), and how long it waited on the host between calls.

Timing each call on the host misleads on a GPU: the work is asynchronous, so a call's GPU time
lands in whichever later call waits for the GPU first (a decode step's mostly in the next
`candidates`, whose read-back waits for it, or in a prefill that synchronises). Here each call is
bracketed by two CUDA events on the current stream instead (`CudaMarks`): the GPU reaches the first
once everything issued before the call is done, and the second once the call's own work is, so
each interval is that call's share of the GPU's timeline (launch gaps inside the call included),
and the intervals never overlap. The run's wall time less their sum is the time the GPU had
nothing of the run's to do: the host's bookkeeping between calls. On the CPU (`HostMarks`, the
tests) a call's work is done when it returns, so the host's clock is the device's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from mlperf_harness.generation.engine import (
    BoolArray,
    Candidates,
    DecoderEngine,
    Float32Array,
    Int64Array,
    PassThroughEngine,
)

CALLS = ("prefill", "advance", "candidates")


class Marks(Protocol):
    def mark(self) -> Any: ...

    def seconds(self, start: Any, end: Any) -> float: ...


class CudaMarks:
    """CUDA events recorded on the current stream (read once the run has synchronised)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def mark(self) -> Any:
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end)) / 1e3


class HostMarks:
    """The host's clock: for an engine whose calls finish their work before they return."""

    def mark(self) -> float:
        return time.perf_counter()

    def seconds(self, start: Any, end: Any) -> float:
        return float(end) - float(start)


class SplitEngine(PassThroughEngine):
    """The engine with each prefill, advance and candidates call bracketed by two marks."""

    def __init__(self, engine: DecoderEngine, marks: Marks) -> None:
        super().__init__(engine)
        self.marks = marks
        self.intervals: list[tuple[str, Any, Any]] = []
        self.prompts = 0

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        start = self.marks.mark()
        super().prefill(slots, prompts)
        self.intervals.append(("prefill", start, self.marks.mark()))
        self.prompts += len(prompts)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        start = self.marks.mark()
        out = super().candidates(slots, beam_scores, block_eos, k)
        self.intervals.append(("candidates", start, self.marks.mark()))
        return out

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        start = self.marks.mark()
        super().advance(slots, parents, tokens)
        self.intervals.append(("advance", start, self.marks.mark()))

    def calls(self) -> dict[str, int]:
        return {name: sum(1 for n, _, _ in self.intervals if n == name) for name in CALLS}

    def split(self, wall_seconds: float) -> dict[str, float]:
        """Seconds of device time per kind of call, and `idle`: the wall time of the run (measured
        by the caller around it, synchronised at both ends) less their sum. Read after the
        closing synchronisation."""
        seconds = dict.fromkeys(CALLS, 0.0)
        for name, start, end in self.intervals:
            seconds[name] += self.marks.seconds(start, end)
        return seconds | {"idle": wall_seconds - sum(seconds.values())}
