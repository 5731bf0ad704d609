"""Simulated GPUs: runners whose batches take the time a real engine took (a LatencyTable), spent
asleep, so that a CPU machine drives the harness as 8, 16 or 64 GPUs would.

Each simulated GPU is a `SimulatedGpu`: a device clock that serialises the batches of its runners
(the torch backend's several runners per GPU share one GPU the same way: while one batch computes,
the next waits for the device). A batch reserves the device from max(now, the device's end of
work) for the table's time and the runner's thread then sleeps until that end: no CPU is burnt, so
64 simulated GPUs fit on 2 cores, and the device's clock, not the sleep's wake-up, decides when the
next batch may start (a late wake-up delays this batch's completion, never the device).

As in the torch backend, every runner belongs to one GPU and serves one worker thread; runners of
different GPUs share nothing (each GPU has its own clock and lock; the table is immutable). Samples
are never read (a GPU runner with start_from_device reads them on the device, not on the host):
`infer_samples` only counts them. Outputs are zeros of the table's output shape and dtype, so
postprocessing and accuracy logs see rows shaped as the real engine's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.devices import spread_over_devices
from mlperf_harness.backends.sim.table import LatencyTable
from mlperf_harness.harness.sample_store import SampleStore


class SimulatedGpu:
    """One simulated device: when its queued work ends. Shared only by that device's runners."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._free_at = 0.0  # time.monotonic() at which the last reserved batch ends
        self.busy_seconds = 0.0  # device time reserved so far (its utilisation, over a run)
        self.batches = 0

    @property
    def free_at(self) -> float:
        """When the device's last reserved batch ends (time.monotonic())."""
        return self._free_at

    def reserve(self, seconds: float) -> float:
        """Queue `seconds` of work behind what the device already has; when it will end."""
        with self._lock:
            end = max(time.monotonic(), self._free_at) + seconds
            self._free_at = end
            self.busy_seconds += seconds
            self.batches += 1
        return end

    def reset(self) -> None:
        """Forget the reserved work's record (between runs over the same runners)."""
        with self._lock:
            self.busy_seconds, self.batches = 0.0, 0


class SimRunner(Runner):
    name = "sim"

    def __init__(self, table: LatencyTable, device: SimulatedGpu) -> None:
        self.table = table
        self.device = device
        self._zeros: npt.NDArray[np.generic] | None = None

    def activate(self) -> None:
        # One read-only block of answers, sliced per batch: no allocation on the batch path.
        zeros = np.zeros((self.table.largest, *self.table.output_shape), self.table.output_dtype)
        zeros.flags.writeable = False
        self._zeros = zeros

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        return self._run(len(batch))

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        return self._run(len(indices))

    def _run(self, count: int) -> npt.NDArray[np.generic]:
        end = self.device.reserve(self.table.batch_seconds(count))
        wait = end - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # releases the GIL; the thread uses no CPU until the batch is "done"
        return self._answers(count)

    def _answers(self, count: int) -> npt.NDArray[np.generic]:
        zeros = self._zeros
        if zeros is None:
            raise RuntimeError("the sim runner is not active")
        if count <= len(zeros):
            return zeros[:count]
        return np.zeros((count, *self.table.output_shape), self.table.output_dtype)

    def deactivate(self) -> None:
        self._zeros = None


def sim_runners(table: LatencyTable, gpus: int, streams_per_gpu: int) -> list[Runner]:
    """`streams_per_gpu` runners on each of `gpus` simulated GPUs, ordered as the torch backend
    orders its GPUs' runners (spread_over_devices)."""
    devices = [SimulatedGpu(index) for index in range(gpus)]
    return spread_over_devices(
        gpus, streams_per_gpu, lambda index: SimRunner(table, devices[index])
    )
