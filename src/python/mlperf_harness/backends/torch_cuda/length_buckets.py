"""How a batch of variable-length sequences runs on engines captured per (length bucket, batch size).

BERT's samples are padded to 384 tokens, but most are shorter: computing each at the smallest bucket
that holds its real length (e.g. 128, 192, 256, 320 or 384 tokens) saves most of the work. A batch
is sorted by length, split by bucket, and each bucket's samples run in chunks of at most the largest
captured batch size, each chunk on the smallest captured batch that holds it (its spare rows are
computed and thrown away). Pure planning: no torch, tested on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

DEFAULT_BUCKETS = (128, 192, 256, 320, 384)
# The captured batch sizes up to a largest one: fine enough that a partial chunk wastes little.
_LADDER = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass(frozen=True)
class Chunk:
    seq: int  # the bucket: tokens computed per sample
    graph_batch: int  # the captured batch size it runs on
    start: int  # its samples are order[start : start + count] of the plan
    count: int


@dataclass(frozen=True)
class Plan:
    order: npt.NDArray[np.int64]  # batch positions sorted by length
    chunks: tuple[Chunk, ...]


def batch_ladder(largest: int) -> tuple[int, ...]:
    if largest < 1:
        raise HarnessError(f"the largest engine batch must be at least 1, got {largest}")
    return (*(size for size in _LADDER if size < largest), largest)


def check_buckets(buckets: Sequence[int], full_length: int) -> tuple[int, ...]:
    ordered = tuple(sorted(set(buckets)))
    if not ordered or ordered[0] < 1 or ordered[-1] != full_length:
        raise HarnessError(
            f"sequence-length buckets {list(buckets)} must be positive and end at the full "
            f"length {full_length}"
        )
    return ordered


def plan_batch(
    lengths: npt.NDArray[np.integer[Any]], buckets: Sequence[int], ladder: Sequence[int]
) -> Plan:
    """The chunks a batch of samples with these real lengths runs in; `buckets` and `ladder`
    ascending, the last bucket holding every length."""
    lengths = np.asarray(lengths)
    if len(lengths) and int(lengths.max()) > buckets[-1]:
        raise HarnessError(f"a sample of {int(lengths.max())} tokens exceeds {buckets[-1]}")
    order = np.argsort(lengths, kind="stable").astype(np.int64)
    bucket_of = np.searchsorted(np.asarray(buckets), lengths[order], side="left")
    largest = ladder[-1]
    chunks: list[Chunk] = []
    start = 0
    for bucket_index, count in zip(*np.unique(bucket_of, return_counts=True), strict=True):
        seq = int(buckets[int(bucket_index)])
        end = start + int(count)
        while start < end:
            size = min(largest, end - start)
            graph_batch = next(b for b in ladder if b >= size)
            chunks.append(Chunk(seq, graph_batch, start, size))
            start += size
    return Plan(order, tuple(chunks))
