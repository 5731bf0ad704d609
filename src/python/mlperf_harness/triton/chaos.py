"""Servers killed and started again on a schedule while a run goes on (the failover soak).

One server at a time, in turn: after `first_s`, and then every `every_s`, the next server is ended,
alternately by SIGKILL (a crash: its connections close, the batches it held are lost) and by
SIGTERM (a clean stop: it answers what it holds, then refuses), stays down `down_s`, and is started
again on its port, the same command. A server is only ended while every other one is up, so the
run always has one. Each event is printed and recorded with its time since the schedule began.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlperf_harness.triton.server_process import ServerProcess

KILL = "SIGKILL"
TERM = "SIGTERM"

# Starts a server again on the same port (a new process): what start_server returns.
Restart = Callable[[ServerProcess], ServerProcess]


@dataclass
class Outage:
    server: str  # its address
    how: str  # KILL or TERM
    at_s: float  # when it was ended
    back_at_s: float | None = None  # when its restart was ready (None: not before the end)


class Chaos:
    def __init__(
        self,
        servers: list[ServerProcess],
        restart: Restart,
        *,
        first_s: float,
        every_s: float,
        down_s: float,
        label: str,
    ) -> None:
        self.servers = servers  # replaced in place as servers are started again
        self.outages: list[Outage] = []
        self._restart = restart
        self._first_s = first_s
        self._every_s = every_s
        self._down_s = down_s
        self._label = label
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)
        self._failure: BaseException | None = None

    def start(self) -> Chaos:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        """No more outages; waits for a restart under way (every server is up after)."""
        self._stop.set()
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    def now(self) -> float:
        return time.monotonic() - self._start

    def _run(self) -> None:
        try:
            turn = 0
            wait = self._first_s
            while not self._stop.wait(wait):
                began = time.monotonic()
                if all(server.alive() for server in self.servers):
                    index = turn % len(self.servers)
                    self._outage(index, KILL if turn % 2 == 0 else TERM)
                    turn += 1
                wait = max(0.0, self._every_s - (time.monotonic() - began))
        except BaseException as failure:  # a server that does not start again: the soak's error
            self._failure = failure

    def _outage(self, index: int, how: str) -> None:
        server = self.servers[index]
        outage = Outage(str(server.address), how, self.now())
        self.outages.append(outage)
        self._say(f"{how} to server {outage.server} at {outage.at_s:.1f} s")
        if how == KILL:
            server.kill()
        else:
            server.stop()
        time.sleep(self._down_s)  # down for at least this long, even when the run ends meanwhile
        self.servers[index] = self._restart(server)
        outage.back_at_s = self.now()
        self._say(f"server {outage.server} is serving again at {outage.back_at_s:.1f} s")

    def _say(self, text: str) -> None:
        print(f"soak: {self._label}: {text}", file=sys.stderr, flush=True)


def count_by_server(outages: Sequence[Outage]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outage in outages:
        counts[outage.server] = counts.get(outage.server, 0) + 1
    return counts
