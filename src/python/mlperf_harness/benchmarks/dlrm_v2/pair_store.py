"""The sample store of DLRM-v2: a LoadGen sample is a user's group of pairs (100 to 700 in the
reference's distribution), so samples differ in size and the model's batch is pairs, not samples.

Each loaded pair is one packed int32 row, `ROW_WIDTH` wide: its label, its 13 dense features (the
float32 bits), then its 214 sparse indices: one array for a GPU runner to copy whole, and one gather
for a batch of samples. `gather(indices)` returns the rows of every pair of those samples in order
(not one row per sample: only DLRM-v2's runners, runners.py, read this store), `pair_counts` how
many belong to each."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.dlrm_v2.topology import DENSE_FEATURES, INDICES_PER_PAIR
from mlperf_harness.datasets.criteo.store import CriteoPreprocessed
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

LABEL_COLUMN = 0
DENSE_COLUMNS = slice(1, 1 + DENSE_FEATURES)
SPARSE_COLUMNS = slice(1 + DENSE_FEATURES, 1 + DENSE_FEATURES + INDICES_PER_PAIR)
ROW_WIDTH = 1 + DENSE_FEATURES + INDICES_PER_PAIR
WARMUP_PAIRS_PER_SAMPLE = 270  # the reference's mean group size

IntArray = npt.NDArray[np.int64]


def pack_rows(
    dense: npt.NDArray[np.float32], sparse: npt.NDArray[np.int32], labels: npt.NDArray[np.generic]
) -> npt.NDArray[np.int32]:
    rows = np.empty((len(labels), ROW_WIDTH), dtype=np.int32)
    rows[:, LABEL_COLUMN] = labels
    rows[:, DENSE_COLUMNS] = np.ascontiguousarray(dense, dtype=np.float32).view(np.int32)
    rows[:, SPARSE_COLUMNS] = sparse
    return rows


def unpack_rows(
    rows: npt.NDArray[np.int32],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """(dense float32 [P, 13], sparse int32 [P, 214], labels float32 [P]) of packed rows."""
    dense = np.ascontiguousarray(rows[:, DENSE_COLUMNS]).view(np.float32)
    sparse = np.ascontiguousarray(rows[:, SPARSE_COLUMNS])
    return dense, sparse, rows[:, LABEL_COLUMN].astype(np.float32)


def ranges_positions(starts: IntArray, counts: IntArray) -> IntArray:
    """The positions start, start+1, ..., start+count-1 of every range in turn, as one array."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    first_of_range = np.cumsum(counts) - counts
    positions: IntArray = np.arange(total, dtype=np.int64) + np.repeat(
        starts - first_of_range, counts
    )
    return positions


class PairGroupStore(SampleStore):
    def __init__(
        self, dataset: CriteoPreprocessed, total_count: int, performance_count: int
    ) -> None:
        self.total_count = total_count
        self.performance_count = min(performance_count, total_count)
        self._dataset = dataset
        groups = np.asarray(dataset.groups, dtype=np.int64)
        self.sizes: IntArray = np.diff(groups)[:total_count]
        self._first_pair = groups[:total_count]
        self._rows: npt.NDArray[np.int32] = np.empty((0, ROW_WIDTH), dtype=np.int32)
        self._start = np.full(total_count, -1, dtype=np.int64)  # where a loaded sample's rows are

    @property
    def max_pairs(self) -> int:
        """The most pairs a sample holds (a response's width)."""
        return int(self.sizes.max()) if len(self.sizes) else 0

    def load(self, indices: Sequence[int]) -> None:
        fresh = np.array([i for i in indices if self._start[i] < 0], dtype=np.int64)
        if not len(fresh):
            return
        counts = self.sizes[fresh]
        pairs = ranges_positions(self._first_pair[fresh], counts)
        d = self._dataset
        rows = pack_rows(d.dense[pairs], d.sparse[pairs], d.labels[pairs])
        self._start[fresh] = len(self._rows) + np.cumsum(counts) - counts
        self._rows = np.concatenate([self._rows, rows]) if len(self._rows) else rows

    def unload(self, indices: Sequence[int]) -> None:
        self._rows = np.empty((0, ROW_WIDTH), dtype=np.int32)
        self._start[:] = -1

    def loaded_rows(self) -> tuple[npt.NDArray[np.int32], IntArray]:
        """(every loaded pair's packed row, where each sample index's rows start or -1): what a
        GPU runner copies to its device once the samples are loaded."""
        return self._rows, self._start

    def pair_counts(self, indices: Sequence[int] | IntArray) -> IntArray:
        counts: IntArray = self.sizes[np.asarray(indices, dtype=np.int64)]
        return counts

    def gather(
        self, indices: Sequence[int], out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.int32]:
        index = np.asarray(indices, dtype=np.int64)
        starts = self._start[index]
        if np.any(starts < 0):
            missing = int(index[np.argmax(starts < 0)])
            raise HarnessError(f"LoadGen asked for sample {missing}, which was never loaded")
        rows: npt.NDArray[np.int32] = self._rows[ranges_positions(starts, self.sizes[index])]
        return rows

    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.int32]:
        """Pairs as many as `batch_size` average samples hold: zero features, index 0 of every
        table, label 0."""
        return np.zeros((batch_size * WARMUP_PAIRS_PER_SAMPLE, ROW_WIDTH), dtype=np.int32)
