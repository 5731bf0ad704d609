"""A sample store for samples of different shapes (3D-UNet's CT volumes), each kept as its own array.

PreloadedSampleStore stacks every loaded sample into one array, which samples of different shapes
cannot share. Here each loaded sample stays its own array; a batch is one sample (or several of one
shape), so such benchmarks run with batch size 1 and batch inside the model call instead (3D-UNet
batches a volume's windows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

ReadSample = Callable[[int], npt.NDArray[np.generic]]


class VolumeStore(SampleStore):
    def __init__(
        self,
        read_sample: ReadSample,
        total_count: int,
        performance_count: int,
        warmup_shape: tuple[int, ...],
        warmup_dtype: type[np.generic] = np.float32,
    ) -> None:
        self.total_count = total_count
        self.performance_count = min(performance_count, total_count)
        self._read = read_sample
        self._loaded: dict[int, npt.NDArray[np.generic]] = {}
        self._warmup_shape = warmup_shape
        self._warmup_dtype = warmup_dtype

    def load(self, indices: Sequence[int]) -> None:
        for index in indices:
            if index not in self._loaded:
                self._loaded[index] = self._read(index)

    def unload(self, indices: Sequence[int]) -> None:
        self._loaded.clear()  # LoadGen unloads a whole set before loading the next

    def loaded(self) -> Mapping[int, npt.NDArray[np.generic]]:
        """Every loaded sample by index (a GPU runner copies them to its device)."""
        return MappingProxyType(self._loaded)

    def sample(self, index: int) -> npt.NDArray[np.generic]:
        try:
            return self._loaded[index]
        except KeyError:
            raise HarnessError(
                f"LoadGen asked for sample {index}, which was never loaded"
            ) from None

    def gather(
        self, indices: Sequence[int], out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.generic]:
        samples = [self.sample(index) for index in indices]
        shapes = {sample.shape for sample in samples}
        if len(shapes) > 1:
            raise HarnessError(
                f"samples of different shapes ({', '.join(map(str, sorted(shapes)))}) cannot share "
                "a batch: run this benchmark with --batch_size 1"
            )
        if out is not None:
            np.stack(samples, out=out)
            return out
        return np.stack(samples) if samples else np.empty((0,), dtype=self._warmup_dtype)

    def warmup_batch(self, batch_size: int) -> npt.NDArray[np.generic]:
        return np.zeros((batch_size, *self._warmup_shape), dtype=self._warmup_dtype)
