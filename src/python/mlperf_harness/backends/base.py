"""The one runner protocol every backend implements (after Polygraphy's runners).

A runner is activated once (load the engine, allocate buffers), then `infer` is called with a batch of
preprocessed samples stacked on axis 0 and returns one output row per sample, then it is deactivated.

The harness calls `infer_samples` with the sample store and the batch's sample indices: by default
that gathers the batch on the host and calls `infer`; a GPU runner overrides it to gather straight
into its pinned staging memory, or on the GPU itself from a copy made in `samples_loaded`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from mlperf_harness.harness.sample_store import SampleStore

if TYPE_CHECKING:
    from mlperf_harness.native import InlineRoundTrips


class Runner(abc.ABC):
    name: str
    # The host's device the runner computes on (devices.spread_over_devices sets it): a Triton
    # server runs the runners of one device in one model instance process (triton/backend_model.py).
    device_index: int = 0
    # The fewest calls the engine timing at a run's start makes on this runner, however long one
    # takes (harness/engine_timing.py): a 3D-UNet volume takes seconds on a CPU, and three calls
    # still time it steadily.
    min_timed_calls: int = 3

    @abc.abstractmethod
    def activate(self) -> None: ...

    @abc.abstractmethod
    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """Outputs for a batch: shape (len(batch), ...), row i belonging to sample i."""

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        """Outputs for the store's samples at `indices`, row i belonging to indices[i]."""
        return self.infer(store.gather(indices))

    def samples_loaded(self, store: SampleStore) -> None:
        """LoadGen has just loaded (or unloaded) the store's samples, before any timing starts."""
        return  # most runners read samples from the host at each batch: nothing to do here

    def inline_round_trips(self, label_offset: int) -> InlineRoundTrips | None:
        """Where this runner can answer latency queries from C++ on LoadGen's issue thread
        (native.InlineRoundTrips: the torch runner's round trip graphs), the object that does, kept
        bound to its graphs as samples load; its responses are the output's first value, an integer
        label, less `label_offset`. None (every other runner): the harness's Python answers."""
        return None

    @abc.abstractmethod
    def deactivate(self) -> None: ...

    def __enter__(self) -> Runner:
        self.activate()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.deactivate()
