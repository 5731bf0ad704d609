"""LoadGen's SUT and QSL handles as context managers, so no handle outlives its test or leaks on error."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import mlperf_loadgen as lg

IssueQueries = Callable[[Sequence[Any]], None]
FlushQueries = Callable[[], None]
SampleIndices = Callable[[Sequence[int]], None]


@contextmanager
def system_under_test(issue_queries: IssueQueries, flush_queries: FlushQueries) -> Iterator[Any]:
    handle = lg.ConstructSUT(issue_queries, flush_queries)
    try:
        yield handle
    finally:
        lg.DestroySUT(handle)


@contextmanager
def query_sample_library(
    total_count: int,
    performance_count: int,
    load_samples: SampleIndices,
    unload_samples: SampleIndices,
) -> Iterator[Any]:
    handle = lg.ConstructQSL(total_count, performance_count, load_samples, unload_samples)
    try:
        yield handle
    finally:
        lg.DestroyQSL(handle)


@dataclass(frozen=True)
class SampleLibrary:
    """A QSL as either LoadGen path takes it: its counts and the load and unload callbacks (each
    given the sample indices as a list of int)."""

    total_count: int
    performance_count: int
    load: SampleIndices
    unload: SampleIndices
