"""--triton_samples staged under the Python-backend runtime: one HOLD, every instance process.

Under `--triton_runtime python_backend` each model instance is a process of its own (Triton's
Python backend stub: one per device) with its own sample store and runners, and Triton hands a HOLD
request to one of them. That instance holds the set itself, then publishes it in the server's workspace (a file
renamed into place) and answers only once every other instance has held the same set and written
an acknowledgement with its digest; each instance watches the file from a thread of its own. The
run's process therefore sees a HOLD answered only when any instance may be asked for those samples.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError
from mlperf_harness.triton.held_samples import HeldSamples

HOLD_FILE = "hold.json"
POLL_S = 0.01
# Holding a set may copy it to a GPU: generous, but a dead instance must not hang the HOLD forever.
ACK_TIMEOUT_S = 300.0


def _ack_file(directory: Path, instance: int) -> Path:
    return directory / f"ack-{instance}.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    except (OSError, ValueError):
        return None  # not there yet (files are renamed into place whole, never read half-written)


class InstanceHolds:
    """This instance's held samples, kept equal to every other instance's of the same server.

    `alone()` keeps the instance's batches out (BatchGate.hold): a set published by another
    instance is taken up between batches, never under one."""

    def __init__(
        self,
        held: HeldSamples,
        directory: Path,
        instance: int,
        instances: int,
        alone: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self._held = held
        self._directory = directory
        self._instance = instance
        self._instances = instances
        self._alone = alone
        self._seen: str | None = None  # the version of the last set this instance holds
        # Guards the set held, `_seen` and the published file together: a watcher that read the
        # file just before this instance published its own HOLD must not take up the older set.
        self._state = threading.Lock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="hold-watcher", daemon=True)

    def start(self) -> None:
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        self._watcher.join(timeout=5)

    def hold(self, indices: Sequence[int]) -> npt.NDArray[np.uint8]:
        """A HOLD request this instance received: hold the set, publish it, and wait until every
        other instance holds it with the same digest."""
        ids = [int(index) for index in indices]
        version = f"{time.time_ns()}-{self._instance}"
        with self._state:
            digest = self._held.hold(ids)
            self._seen = version
            write_json_atomic(self._directory / HOLD_FILE, {"version": version, "indices": ids})
        deadline = time.monotonic() + ACK_TIMEOUT_S
        waiting = set(range(self._instances)) - {self._instance}
        while waiting:
            for other in sorted(waiting):
                ack = _read_json(_ack_file(self._directory, other))
                if ack is None or ack.get("version") != version:
                    continue
                if ack.get("error"):
                    raise HarnessError(
                        f"model instance {other} could not hold the samples: {ack['error']}"
                    )
                if ack.get("digest") != digest.tobytes().hex():
                    raise HarnessError(
                        f"model instance {other} holds other data than instance {self._instance} "
                        "(their samples' digests differ)"
                    )
                waiting.discard(other)
            if waiting and time.monotonic() > deadline:
                raise HarnessError(
                    f"model instance(s) {sorted(waiting)} did not hold the samples within "
                    f"{ACK_TIMEOUT_S:.0f} s"
                )
            if waiting:
                time.sleep(POLL_S)
        return digest

    def infer(self, runner: Runner, indices: npt.NDArray[np.int64]) -> npt.NDArray[np.generic]:
        return self._held.infer(runner, indices)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            published = _read_json(self._directory / HOLD_FILE)
            if published is None or published.get("version") == self._seen:
                continue
            with self._alone(), self._state:
                # Read again: this instance may have published a newer set meanwhile.
                published = _read_json(self._directory / HOLD_FILE)
                if published is None or published.get("version") == self._seen:
                    continue
                version = str(published["version"])
                ack: dict[str, Any] = {"version": version}
                try:
                    ack["digest"] = self._held.hold(published["indices"]).tobytes().hex()
                except Exception as error:
                    ack["error"] = f"{type(error).__name__}: {error}"
                self._seen = version
            write_json_atomic(_ack_file(self._directory, self._instance), ack)
