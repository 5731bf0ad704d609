"""Which CUDA graph buckets DLRM-v2's torch runner captures while samples load (torch_runner.py's
likely_buckets) and the batch it fills each with (bucket_filling): pure arithmetic, no torch."""

from __future__ import annotations

import numpy as np
import pytest

from mlperf_harness.benchmarks.dlrm_v2.torch_runner import (
    bucket_filling,
    likely_buckets,
    pair_buckets,
)
from mlperf_harness.errors import HarnessError


def test_offline_batches_take_the_buckets_up_to_a_full_batchs_likely_count() -> None:
    counts = np.random.default_rng(0).integers(1, 541, 8192)  # mean about 270, as the reference
    buckets = pair_buckets(256 * 540)
    chosen = likely_buckets(buckets, counts, 256)
    assert chosen == buckets[: len(chosen)]  # the smaller ones too: Server's partial batches
    full = [int(counts[i : i + 256].sum()) for i in range(0, 8192 - 255, 256)]
    assert max(full) <= chosen[-1]  # every full batch of these samples has its graph
    assert chosen[-2] < 256 * counts.mean() + 4 * 16 * counts.std() <= chosen[-1]
    assert len(chosen) < len(buckets)  # not the buckets no batch reaches


def test_each_bucket_is_filled_by_a_batch_that_takes_it() -> None:
    buckets = pair_buckets(128 * 700)
    for previous, bucket in zip([0, *buckets], buckets, strict=False):
        counts = bucket_filling(bucket, previous, 128, 700)
        assert len(counts) <= 128 and counts.max() <= 700
        assert previous < counts.sum() <= bucket
        assert next(b for b in buckets if b >= counts.sum()) == bucket


def test_nothing_loaded_captures_nothing_and_an_unfillable_bucket_is_refused() -> None:
    assert likely_buckets(pair_buckets(1000), np.zeros(0, dtype=np.int64), 8) == []
    with pytest.raises(HarnessError, match="fills 5120"):
        bucket_filling(5120, 4096, 2, 100)  # two samples of at most 100 pairs: 200 pairs
