"""A runner that computes nothing and answers every sample with an empty output row."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner


class NullRunner(Runner):
    name = "null"

    def activate(self) -> None:
        pass

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        return np.empty((len(batch), 0), dtype=np.uint8)

    def deactivate(self) -> None:
        pass
