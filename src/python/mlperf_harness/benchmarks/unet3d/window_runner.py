"""3D-UNet's runner: a volume in, its segmentation out, through any backend's window runner.

The model sees 128³ windows; a sample is a whole preprocessed volume. This wraps the backend's
runner (onnxruntime on the CPU) so the harness sees one sample in and one response out:
`sliding_window.sliding_window_labels` cuts the volume into overlapping windows, runs them
`window_batch` at a time on the wrapped runner, blends their logits with the Gaussian importance
map and takes the argmax. The response is the uint8 labels of the whole padded volume, flattened.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.unet3d.sliding_window import sliding_window_labels
from mlperf_harness.harness.sample_store import SampleStore


class SlidingWindowRunner(Runner):
    def __init__(self, windows: Runner, window_batch: int) -> None:
        self._windows = windows
        self._window_batch = window_batch
        self.name = windows.name

    def activate(self) -> None:
        self._windows.activate()

    def samples_loaded(self, store: SampleStore) -> None:
        self._windows.samples_loaded(store)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        """[N, 1, D, H, W] volumes of one shape -> [N, D * H * W] labels."""
        volumes = np.asarray(batch, dtype=np.float32)
        rows = [
            sliding_window_labels(volume, self._run_windows, self._window_batch).ravel()
            for volume in volumes
        ]
        if not rows:
            return np.empty((0, 0), dtype=np.uint8)
        return np.stack(rows)

    def _run_windows(self, windows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return np.asarray(self._windows.infer(windows), dtype=np.float32)

    def deactivate(self) -> None:
        self._windows.deactivate()
