"""The batches and the HOLDs of one model instance process: its runner threads run batches side by
side, and a HOLD (which reloads the instance's sample store and tells its runners) waits until
none runs, and keeps new ones waiting until it is done."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class BatchGate:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._batches = 0  # batches running
        self._holds_waiting = 0
        self._holding = False

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """A runner thread's batch: beside other batches, never beside a HOLD. A HOLD waiting
        goes first: new batches wait for it (before timing, a HOLD must not wait on a stream of
        batches)."""
        with self._changed:
            while self._holding or self._holds_waiting:
                self._changed.wait()
            self._batches += 1
        try:
            yield
        finally:
            with self._changed:
                self._batches -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """A HOLD, alone: once every running batch is done."""
        with self._changed:
            self._holds_waiting += 1
            while self._holding or self._batches:
                self._changed.wait()
            self._holds_waiting -= 1
            self._holding = True
        try:
            yield
        finally:
            with self._changed:
                self._holding = False
                self._changed.notify_all()
