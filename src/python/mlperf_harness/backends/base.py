"""The one runner protocol every backend implements (after Polygraphy's runners).

A runner is activated once (load the engine, allocate buffers), then `infer` is called with a batch of
preprocessed samples stacked on axis 0 and returns one output row per sample, then it is deactivated.
"""

from __future__ import annotations

import abc
from types import TracebackType

import numpy as np
import numpy.typing as npt


class Runner(abc.ABC):
    name: str

    @abc.abstractmethod
    def activate(self) -> None: ...

    @abc.abstractmethod
    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """Outputs for a batch: shape (len(batch), ...), row i belonging to sample i."""

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
