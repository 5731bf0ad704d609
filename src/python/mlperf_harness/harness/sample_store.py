"""Where a benchmark's preprocessed samples live while LoadGen runs (the QSL's storage)."""

from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class SampleStore(abc.ABC):
    total_count: int
    performance_count: int

    @abc.abstractmethod
    def load(self, indices: Sequence[int]) -> None:
        """Bring these samples into memory (LoadGen calls this before timing starts)."""

    @abc.abstractmethod
    def unload(self, indices: Sequence[int]) -> None: ...

    @abc.abstractmethod
    def gather(
        self, indices: Sequence[int], out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.generic]:
        """The loaded samples stacked into one contiguous batch, in the order asked; written into
        `out` (C-contiguous, the batch's shape and dtype) and returned as it, where given."""

    def loaded_samples(self) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.int64]] | None:
        """(every loaded sample stacked, the row of each sample index or -1), or None when the store
        keeps no such array. A GPU runner copies this to device memory (start_from_device)."""
        return None

    @abc.abstractmethod
    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.generic]:
        """A batch shaped like real ones (contents arbitrary), to warm a runner up before timing."""

    def sample_lengths(self) -> npt.NDArray[np.int64] | None:
        """Each sample index's length where a batch's cost follows its longest sample (RNN-T's
        utterance frames), else None: Offline's query is then batched in length order
        (--order_by_length, batching.FixedBatches)."""
        return None


class EmptySampleStore(SampleStore):
    """Samples of zero bytes: for measuring the harness without data movement."""

    def __init__(self, total_count: int, performance_count: int) -> None:
        self.total_count = total_count
        self.performance_count = performance_count

    def load(self, indices: Sequence[int]) -> None:
        pass

    def unload(self, indices: Sequence[int]) -> None:
        pass

    def gather(
        self, indices: Sequence[int], out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.generic]:
        return np.empty((len(indices), 0), dtype=np.uint8) if out is None else out

    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.uint8]:
        return np.empty((batch_size, 0), dtype=np.uint8)
