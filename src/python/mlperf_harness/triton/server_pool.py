"""The client's view of its Triton servers: which are up, what each holds in flight, and the record
of every loss and return (result.json's "triton" entry)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from mlperf_harness.harness.batching import Batch
from mlperf_harness.triton.addresses import ServerAddress


@dataclass(eq=False)
class Pending:
    """One batch until LoadGen has its answer: sent to one server at a time; `attempt` grows with
    every re-send, so an answer of an earlier attempt (a lost server's late reply) is dropped."""

    batch: Batch
    indices: list[int]
    attempt: int = 0
    done: bool = False
    sent_at_s: float = 0.0  # when its current attempt was sent (Clock): its deadline counts from it


@dataclass
class LossEvent:
    at_s: float  # seconds since the run's first batch
    reason: str
    resent_batches: int
    resent_samples: int
    completed_before: int  # samples the server had answered before it was lost

    def to_json(self) -> dict[str, Any]:
        return {
            "at_s": round(self.at_s, 3),
            "reason": self.reason,
            "resent_batches": self.resent_batches,
            "resent_samples": self.resent_samples,
            "completed_before": self.completed_before,
        }


@dataclass(eq=False)
class ServerState:
    address: ServerAddress
    stream: Any  # wire.ServerStream
    alive: bool = True
    # Grows each time its stream is opened again: an error of an earlier stream (cancelled when the
    # server was lost) is not this one's.
    stream_number: int = 0
    inflight: dict[int, Pending] = field(default_factory=dict)  # id(pending) -> pending
    outstanding_samples: int = 0
    completed_batches: int = 0
    completed_samples: int = 0
    losses: list[LossEvent] = field(default_factory=list)
    returns_at_s: list[float] = field(default_factory=list)
    # When its stream last brought an answer (Clock): stamped on the stream's thread as the answer
    # arrives, before the completer's queue, so that a busy client does not make a server look slow.
    heard_at_s: float = 0.0

    def take(self, pending: Pending, now_s: float) -> None:
        pending.sent_at_s = now_s
        self.inflight[id(pending)] = pending
        self.outstanding_samples += len(pending.indices)

    def release(self, pending: Pending) -> None:
        if self.inflight.pop(id(pending), None) is not None:
            self.outstanding_samples -= len(pending.indices)

    def lose(self, at_s: float, reason: str) -> list[Pending]:
        """Mark lost; returns its batches in flight, now nobody's, each to be re-sent."""
        moved = list(self.inflight.values())
        self.inflight.clear()
        self.outstanding_samples = 0
        self.alive = False
        event = LossEvent(
            at_s, reason, len(moved), sum(len(p.indices) for p in moved), self.completed_samples
        )
        self.losses.append(event)
        print(
            f"triton: lost server {self.address} at {at_s:.1f} s ({reason}); re-sending its "
            f"{event.resent_batches} batch(es), {event.resent_samples} sample(s), to the others",
            file=sys.stderr,
            flush=True,
        )
        return moved

    def silent_since(self) -> float | None:
        """Since when it has held work without answering anything (None: it holds none). A server
        that answers is alive however long its queue is; only silence with work in flight counts."""
        oldest = min((p.sent_at_s for p in self.inflight.values()), default=None)
        return None if oldest is None else max(oldest, self.heard_at_s)

    def come_back(self, at_s: float) -> None:
        self.alive = True
        self.returns_at_s.append(at_s)
        print(f"triton: server {self.address} is back at {at_s:.1f} s", file=sys.stderr, flush=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "address": str(self.address),
            "completed_batches": self.completed_batches,
            "completed_samples": self.completed_samples,
            "lost": [loss.to_json() for loss in self.losses],
            "returned_at_s": [round(at, 3) for at in self.returns_at_s],
        }


def least_loaded(servers: list[ServerState], inflight_cap: int) -> ServerState | None:
    """The live server with the least outstanding work that has room for another batch."""
    ready = [s for s in servers if s.alive and len(s.inflight) < inflight_cap]
    return min(ready, key=lambda s: s.outstanding_samples) if ready else None


class Clock:
    """Seconds since the run's start, for the events' `at_s`."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._start
