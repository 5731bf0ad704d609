"""length_buckets: how a batch of BERT samples is cut into (bucket, captured batch) chunks."""

from __future__ import annotations

import numpy as np
import pytest

from mlperf_harness.backends.torch_cuda.length_buckets import (
    DEFAULT_BUCKETS,
    batch_ladder,
    check_buckets,
    plan_batch,
)
from mlperf_harness.errors import HarnessError


def test_every_sample_runs_once_in_a_bucket_that_holds_it() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 385, size=1000)
    ladder = batch_ladder(256)
    plan = plan_batch(lengths, DEFAULT_BUCKETS, ladder)
    covered = np.concatenate([plan.order[c.start : c.start + c.count] for c in plan.chunks])
    assert sorted(covered.tolist()) == list(range(1000))
    for chunk in plan.chunks:
        positions = plan.order[chunk.start : chunk.start + chunk.count]
        assert lengths[positions].max() <= chunk.seq
        smaller = [b for b in DEFAULT_BUCKETS if b < chunk.seq]
        assert not smaller or lengths[positions].min() > smaller[-1]  # the smallest bucket
        assert chunk.graph_batch in ladder and chunk.count <= chunk.graph_batch
        assert chunk.count <= 256
    # Chunks of one bucket are full but the last: padding only at each bucket's end.
    assert sum(c.graph_batch - c.count for c in plan.chunks) < len(DEFAULT_BUCKETS) * 64


def test_order_is_by_length() -> None:
    lengths = np.array([300, 10, 384, 129, 128])
    plan = plan_batch(lengths, DEFAULT_BUCKETS, batch_ladder(8))
    assert lengths[plan.order].tolist() == [10, 128, 129, 300, 384]
    assert [(c.seq, c.count, c.graph_batch) for c in plan.chunks] == [
        (128, 2, 2), (192, 1, 1), (320, 1, 1), (384, 1, 1)
    ]  # fmt: skip


def test_a_partial_chunk_takes_the_smallest_graph_that_holds_it() -> None:
    plan = plan_batch(np.full(300, 100), DEFAULT_BUCKETS, batch_ladder(256))
    assert [(c.count, c.graph_batch) for c in plan.chunks] == [(256, 256), (44, 48)]


def test_ladder_and_buckets_are_checked() -> None:
    assert batch_ladder(1) == (1,)
    assert batch_ladder(100) == (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 100)
    with pytest.raises(HarnessError, match="at least 1"):
        batch_ladder(0)
    assert check_buckets([384, 128], 384) == (128, 384)
    with pytest.raises(HarnessError, match="end at the full length 384"):
        check_buckets([128, 256], 384)
    with pytest.raises(HarnessError, match="exceeds 384"):
        plan_batch(np.array([385]), DEFAULT_BUCKETS, batch_ladder(4))
