"""From Criteo's raw rows to what DLRM-v2 reads: the counts' log and the synthetic multi-hot step.

- Dense: torchrec's Criteo preprocessing (what MLCommons' multi-hot set was made with): a missing
  count is 0, then log(x + 3) as float32.
- Sparse: a raw categorical value (hexadecimal in a day file) taken modulo its table's rows; then
  the synthetic multi-hot step makes each one-hot value a bag of `MULTI_HOT_SIZES[t]` rows of its
  table: the value itself first, then rows that are a fixed function of (table, value, position).
  MLCommons' step (torchrec_dlrm's materialize_synthetic_multihot_dataset) draws those extra rows
  once per table row from torch's generator; ours draws them from a 64-bit mixing hash of the same
  inputs, so that a table of 40 million rows needs no 40-million-row lookup table in memory. The
  bags therefore differ from the official set's: a run for a submission reads the official
  materialized files (preprocess.py takes them as they are), never bags made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.dlrm_v2.topology import MULTI_HOT_SIZES, TABLES
from mlperf_harness.errors import HarnessError

MULTI_HOT_SEED = 0x5DEECE66D


def dense_features(counts: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.float32]:
    """log(x + 3) of the raw counts (missing counts already 0), as float32."""
    shifted = np.asarray(counts, dtype=np.float64) + 3.0
    if np.any(shifted <= 0):
        lowest = int(np.min(counts))
        raise HarnessError(f"a count of {lowest} is below -2: not a Criteo day file's value")
    result: npt.NDArray[np.float32] = np.log(shifted).astype(np.float32)
    return result


def _mix(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser: every input bit reaches every output bit."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: npt.NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return mixed


def multi_hot_bags(
    categorical: npt.NDArray[np.integer[Any]], table_rows: Sequence[int]
) -> npt.NDArray[np.int32]:
    """[N, 26] one-hot rows (each below its table's rows) -> [N, 214] int32: each table's bag in
    turn, the one-hot row first."""
    values = np.asarray(categorical, dtype=np.int64)
    if values.ndim != 2 or values.shape[1] != TABLES:
        raise HarnessError(f"categorical features must be [N, {TABLES}], not {values.shape}")
    parts = []
    for table, (size, rows) in enumerate(zip(MULTI_HOT_SIZES, table_rows, strict=True)):
        column = values[:, table]
        bag = np.empty((len(values), size), dtype=np.int32)
        bag[:, 0] = column
        if size > 1:
            positions = np.arange(1, size, dtype=np.uint64)
            key = (
                np.uint64(MULTI_HOT_SEED)
                ^ (np.uint64(table) << np.uint64(56))
                ^ (column.astype(np.uint64)[:, None] << np.uint64(8))
                ^ positions[None, :]
            )
            bag[:, 1:] = (_mix(key) % np.uint64(rows)).astype(np.int32)
        parts.append(bag)
    return np.concatenate(parts, axis=1)
