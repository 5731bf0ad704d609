"""A sample store that LoadGen fills before timing starts and the workers gather batches from."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.harness.sample_store import SampleStore

# Reads the listed samples from disk, stacked on axis 0 in the order given.
ReadSamples = Callable[[Sequence[int]], npt.NDArray[np.generic]]


class PreloadedSampleStore(SampleStore):
    """Keeps the loaded samples in one contiguous array; `gather` copies a batch out of it in C++,
    with several threads for large batches and the GIL released, into a recycled buffer (pinned,
    for a GPU's host-to-device copies, with `pinned=True`)."""

    def __init__(
        self,
        read_samples: ReadSamples,
        total_count: int,
        performance_count: int,
        *,
        pinned: bool = False,
        gather_threads: int = 0,  # 0: every core (native.gather_threads())
    ) -> None:
        self.total_count = total_count
        self.performance_count = min(performance_count, total_count)
        self._read = read_samples
        self._data: npt.NDArray[np.generic] | None = None
        self._slot_of = np.full(total_count, -1, dtype=np.int64)
        self._buffers = native.BufferPool(pinned=pinned)
        self._gather_threads = gather_threads

    def load(self, indices: Sequence[int]) -> None:
        fresh = [i for i in indices if self._slot_of[i] < 0]
        if not fresh:
            return
        arrays = np.ascontiguousarray(self._read(fresh))
        start = 0 if self._data is None else len(self._data)
        self._data = arrays if self._data is None else np.concatenate([self._data, arrays])
        self._slot_of[fresh] = np.arange(start, start + len(fresh))

    def unload(self, indices: Sequence[int]) -> None:
        # LoadGen unloads a whole set before loading the next; dropping everything is both correct
        # and the cheapest way to give the memory back.
        self._data = None
        self._slot_of[:] = -1

    def loaded_samples(self) -> tuple[npt.NDArray[np.generic], npt.NDArray[np.int64]] | None:
        return None if self._data is None else (self._data, self._slot_of)

    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.generic]:
        example = self._read([0])  # one sample from disk gives shape and dtype
        return np.zeros((batch_size, *example.shape[1:]), dtype=example.dtype)

    def gather(
        self, indices: Sequence[int], out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.generic]:
        """The samples at `indices`, stacked; into `out` (C-contiguous, right size) if given."""
        if self._data is None:
            if len(indices) == 0:
                return np.empty((0,), dtype=np.uint8)
            raise RuntimeError("LoadGen asked for a sample that was never loaded")
        return native.gather(
            self._data,
            self._slot_of,
            indices,
            out,
            pool=self._buffers,
            threads=self._gather_threads,
        )
