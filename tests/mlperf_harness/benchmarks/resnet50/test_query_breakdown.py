"""query_breakdown's cutting of queries into segments, on the CPU: the GPU's CUDA events are the
one thing stood in for (FakeTorch), the host clock and the wrapped calls are real."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace
from typing import Any

import pytest

from mlperf_harness.benchmarks.resnet50.query_breakdown import SEGMENTS, QueryMarks, table
from mlperf_harness.errors import HarnessError


class FakeEvent:
    """A CUDA event stood in for: it records the host clock, so `gpu` is the host's interval."""

    def __init__(self, enable_timing: bool) -> None:
        assert enable_timing
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, other: FakeEvent) -> float:
        return (other.at - self.at) * 1e3  # ms, as torch gives it


FakeTorch = SimpleNamespace(cuda=SimpleNamespace(Event=FakeEvent))


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_the_engine_alone_s_queries_run_from_one_synchronisation_to_the_next() -> None:
    marks = QueryMarks(FakeTorch, explicit_queries=False)
    marks.replay(lambda: None)  # warm-up: before any synchronisation, not a query
    marks.synchronize(lambda: None)
    assert marks.queries == []
    for _ in range(3):
        busy(0.001)  # the loop's staging
        marks.replay(lambda: busy(0.0005))
        busy(0.0002)
        marks.synchronize(lambda: busy(0.002))
    rows = marks.segments_us()
    assert len(rows) == 3
    for row in rows:
        assert math.isnan(row["gap"]) and row["post"] == 0.0
        assert row["pre"] >= 1000 and row["replay"] >= 500 and row["sync"] >= 2000
        parts = sum(row[name] for name in ("pre", "replay", "mid", "sync"))
        assert parts == pytest.approx(row["total"])
        assert row["gpu"] >= 500


def test_the_harness_s_queries_run_from_begin_to_end_and_ignore_what_is_outside() -> None:
    marks = QueryMarks(FakeTorch, explicit_queries=True)
    marks.replay(lambda: None)  # warm-up and capture: outside any query
    marks.synchronize(lambda: None)
    for _ in range(2):
        marks.begin()
        busy(0.0005)
        marks.replay(lambda: None)
        marks.synchronize(lambda: busy(0.001))
        busy(0.0003)  # postprocessing, completion
        marks.end()
        busy(0.0004)  # LoadGen's turn
    marks.begin()  # a query with no replay (nothing pending) is not one
    marks.end()
    rows = marks.segments_us()
    assert len(rows) == 2
    assert math.isnan(rows[0]["gap"]) and rows[1]["gap"] >= 400
    for row in rows:
        assert row["pre"] >= 500 and row["sync"] >= 1000 and row["post"] >= 300
        parts = sum(row[name] for name in ("pre", "replay", "mid", "sync", "post"))
        assert parts == pytest.approx(row["total"])


def test_the_table_has_a_line_per_tenth_and_refuses_fewer_queries() -> None:
    rows: list[dict[str, Any]] = [
        {"total": float(i), **dict.fromkeys(SEGMENTS, 1.0), "gap": math.nan} for i in range(100)
    ]
    lines = table("raw b1", rows).splitlines()
    assert lines[0].split()[:4] == ["raw", "b1", "queries", "p90"]
    assert len(lines) == 11 and lines[1].split()[2] == "10"
    assert float(lines[-1].split()[4]) == pytest.approx(94.5)  # the mean of 90..99
    assert lines[-1].split()[-2] == "nan"  # no gap: the engine alone
    with pytest.raises(HarnessError, match="too few"):
        table("raw b1", rows[:9])
