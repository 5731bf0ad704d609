"""A sample store that LoadGen fills before timing starts and the workers gather batches from."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.harness.sample_store import SampleStore

# Reads the listed samples from disk, stacked on axis 0 in the order given.
ReadSamples = Callable[[Sequence[int]], npt.NDArray[np.generic]]


class PreloadedSampleStore(SampleStore):
    """Keeps the loaded samples in one contiguous array; `gather` copies a batch out of it with one
    fancy-indexing call (no Python loop per sample)."""

    def __init__(self, read_samples: ReadSamples, total_count: int, performance_count: int) -> None:
        self.total_count = total_count
        self.performance_count = min(performance_count, total_count)
        self._read = read_samples
        self._data: npt.NDArray[np.generic] | None = None
        self._slot_of = np.full(total_count, -1, dtype=np.int64)

    def load(self, indices: Sequence[int]) -> None:
        fresh = [i for i in indices if self._slot_of[i] < 0]
        if not fresh:
            return
        arrays = self._read(fresh)
        start = 0 if self._data is None else len(self._data)
        self._data = arrays if self._data is None else np.concatenate([self._data, arrays])
        self._slot_of[fresh] = np.arange(start, start + len(fresh))

    def unload(self, indices: Sequence[int]) -> None:
        # LoadGen unloads a whole set before loading the next; dropping everything is both correct
        # and the cheapest way to give the memory back.
        self._data = None
        self._slot_of[:] = -1

    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.generic]:
        example = self._read([0])  # one sample from disk gives shape and dtype
        return np.zeros((batch_size, *example.shape[1:]), dtype=example.dtype)

    def gather(self, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        slots = self._slot_of[np.asarray(indices, dtype=np.int64)]
        if self._data is None or (slots < 0).any():
            raise RuntimeError("LoadGen asked for a sample that was never loaded")
        return self._data[slots]
