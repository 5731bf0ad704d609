"""Held samples without a server (test_held_samples.py, test_instance_holds.py): a small store of
random samples and a runner that answers each sample with its sum."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.harness.sample_store import SampleStore

COUNT = 10


def store_of(samples: npt.NDArray[np.float32]) -> PreloadedSampleStore:
    return PreloadedSampleStore(lambda indices: samples[list(indices)], len(samples), COUNT)


def data(seed: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).random((COUNT, 3, 4), dtype=np.float32)


class SumRunner(Runner):
    """Answers each sample with its sum (which samples a call read), and counts the times it was
    told of a new loaded set."""

    name = "sum"

    def __init__(self) -> None:
        self.told = 0

    def activate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        rows = np.asarray(batch, dtype=np.float64).reshape(len(batch), -1)
        sums: npt.NDArray[np.float64] = rows.sum(axis=1, keepdims=True)
        return sums

    def samples_loaded(self, store: SampleStore) -> None:
        self.told += 1

    def deactivate(self) -> None:
        pass
