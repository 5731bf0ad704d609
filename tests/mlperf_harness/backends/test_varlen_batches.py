"""varlen_batches: how a large batch of BERT samples runs as its real tokens concatenated."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mlperf_harness.backends.torch_cuda.varlen_batches import (
    flat_indices,
    plan_varlen,
    token_offsets,
)
from mlperf_harness.errors import HarnessError


def test_every_real_token_runs_once_within_the_call_budget() -> None:
    lengths = np.random.default_rng(0).integers(1, 385, size=1000)
    calls = plan_varlen(lengths, call_tokens=20_000)
    covered = np.concatenate([call.positions for call in calls])
    assert sorted(covered.tolist()) == list(range(1000))
    assert sum(call.tokens for call in calls) == int(lengths.sum())
    for call in calls:
        assert call.tokens <= 20_000
        assert np.diff(call.cu_seqlens).tolist() == lengths[call.positions].tolist()
        assert call.cu_seqlens[0] == 0 and call.cu_seqlens.dtype == np.int32
        assert call.max_length == lengths[call.positions].max()
    # Shortest first and cut only where the next sequence would not fit: every call but the last
    # is full to within one sequence.
    for call, following in itertools.pairwise(calls):
        assert call.max_length <= lengths[following.positions].min()
        assert call.tokens + lengths[following.positions[0]] > 20_000


def test_tokens_are_read_from_and_written_to_their_own_rows_and_columns() -> None:
    lengths = np.array([3, 1, 2])
    (call,) = plan_varlen(lengths)
    assert call.positions.tolist() == [1, 2, 0]  # shortest first
    assert call.cu_seqlens.tolist() == [0, 1, 3, 6]
    assert token_offsets(call).tolist() == [0, 0, 1, 0, 1, 2]
    rows = np.array([7, 5, 9])  # batch position i is sample row rows[i]
    assert flat_indices(rows, call, 10).tolist() == [50, 90, 91, 70, 71, 72]


def test_an_empty_or_too_long_sequence_is_refused() -> None:
    with pytest.raises(HarnessError, match="at least one real token"):
        plan_varlen(np.array([4, 0]))
    with pytest.raises(HarnessError, match="exceeds a varlen call"):
        plan_varlen(np.array([40]), call_tokens=32)
    assert plan_varlen(np.array([], dtype=np.int64)) == ()
