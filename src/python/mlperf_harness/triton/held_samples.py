"""A server's side of --triton_samples staged: the samples LoadGen loaded, held by the server from
its own copy of the preprocessed data, so that a request names its samples instead of carrying them.

The run's process sends the whole set LoadGen holds (HOLD) whenever it changes, and to a server
that comes back after a loss; the server loads it into its sample store and tells its runners, as
the direct harness does before timing (a GPU runner with start_from_device copies the set to its
device). Requests then carry sample indices (SAMPLE_IDS) and each runner gathers them itself.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.triton.served_model import samples_digest


class SampleHolder(Protocol):
    """What a model instance holds samples with: HeldSamples, or InstanceHolds where each instance
    is a process of its own (instance_holds.py)."""

    def hold(self, indices: Sequence[int]) -> npt.NDArray[np.uint8]: ...

    def infer(self, runner: Runner, indices: npt.NDArray[np.int64]) -> npt.NDArray[np.generic]: ...


class HeldSamples:
    """The server's store and the set it holds; one for all the model's instances."""

    def __init__(self, store: SampleStore, runners: Sequence[Runner]) -> None:
        """`runners`: each distinct runner once (run_harness.unique_runners)."""
        self._store = store
        self._runners = list(runners)
        self._held: list[int] = []
        self._lock = threading.Lock()

    def hold(self, indices: Sequence[int]) -> npt.NDArray[np.uint8]:
        """Hold exactly these samples from now on; their digest, for the sender to compare."""
        with self._lock:
            self._store.unload(self._held)
            self._held = []
            self._store.load(indices)
            self._held = list(indices)
            for runner in self._runners:
                runner.samples_loaded(self._store)
            return samples_digest(self._store, indices)

    def infer(self, runner: Runner, indices: npt.NDArray[np.int64]) -> npt.NDArray[np.generic]:
        return runner.infer_samples(self._store, [int(index) for index in indices])
