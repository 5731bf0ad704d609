"""The Triton harness's system under test: LoadGen's queries -> batches -> Triton servers over gRPC.

LoadGen runs here, in one process (one run, one log). Queries go into the same native batch source
as the direct harness's (Offline's fixed batches, Server's dynamic batcher); a dispatcher sends each
batch, gathered from the sample store, on the gRPC stream (wire.ServerStream) of the live server with
the least outstanding work, holding at most `inflight` batches at each. The answers complete the
batch's samples in one LoadGen call, as the direct harness does. With `samples="staged"` a request
names its samples instead of carrying them: every server is told the set LoadGen loads (a HOLD, whose
digest must match this process's samples) and holds it itself (held_samples.py).

Failover: any error from a server's stream (connection refused or reset, the model gone, an error
answer) or a server that holds batches and answers nothing for `timeout_s` (a stream has no
deadline of its own: a watchdog checks ten times a second) marks it lost; every batch it held is
re-sent to the others, each batch's `attempt` growing so that a late answer from the lost server
is dropped: every sample is completed exactly once. Its stream is closed. A prober asks lost
servers every half second whether they are back (and still serve the same model), opens a new
stream and uses them again.

Replies are handed from the streams' threads to one completer thread of ours, which completes them
in LoadGen: a stream's thread ends with its stream, and a thread that called LoadGen and exits
mid-test can crash LoadGen's log thread (a use after free in `TlsLogger::SwapBuffers`, seen here
within seconds with one batch in flight; loadgen/threads.py).

With every server lost for longer than the grace period the run cannot go on
and LoadGen cannot be stopped: `on_all_lost` ends it (the harness marks the logs partial and exits
with one line).
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.harness.batching import BatchSource
from mlperf_harness.harness.completion import complete
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.harness.sut import Postprocess, SizedPostprocess, responses
from mlperf_harness.triton import wire
from mlperf_harness.triton.addresses import ServerAddress
from mlperf_harness.triton.served_model import OUTPUT, ServedModel, samples_digest
from mlperf_harness.triton.server_pool import Clock, Pending, ServerState, least_loaded

PROBE_INTERVAL_S = 0.5
DEADLINE_CHECK_S = 0.1  # how often the servers' silence is checked against `timeout_s`
STAGED = "staged"
# A HOLD loads the set from the server's disk (and onto its GPUs), before timing: given longer than
# a batch.
HOLD_TIMEOUT_S = 300.0
_WAIT_S = 0.05
# (server, its stream's number, request id or None, the gRPC result or None, the error or None)
Reply = tuple[ServerState, int, str | None, Any, Any]


class TritonSUT:
    def __init__(
        self,
        servers: Sequence[ServerAddress],
        served: ServedModel,
        store: SampleStore,
        batches: BatchSource,
        postprocess: Postprocess,
        *,
        sized_postprocess: SizedPostprocess | None = None,
        response: str = OUTPUT,
        response_bytes: npt.NDArray[np.int64] | None = None,
        samples: str = "wire",
        inflight: int = 4,
        timeout_s: float = 30.0,
        all_lost_grace_s: float = 5.0,
        on_all_lost: Callable[[str], None],
    ) -> None:
        self._served = served
        self._store = store
        self._batches = batches
        self._postprocess = postprocess
        # responses whose lengths differ from sample to sample (RetinaNet's detections): the raw
        # output comes over the wire and is cut into each sample's response here
        self._sized_postprocess = sized_postprocess
        self._response = response
        self._response_bytes = response_bytes
        self._staged = samples == STAGED
        # Staged: the set LoadGen holds, which every server must hold, and its digest (the same
        # for every server: computed once per set).
        self._held: list[int] = []
        self._held_digest = b""
        self._inflight = inflight
        self._timeout_s = timeout_s
        self._grace_s = all_lost_grace_s
        self._on_all_lost = on_all_lost
        self._servers = [
            ServerState(address, wire.ServerStream(address, served.model_name, response))
            for address in servers
        ]
        self._lock = threading.Condition()
        # Request id -> (server, batch, attempt), for the batches sent and not yet answered.
        self._sent: dict[str, tuple[ServerState, Pending, int]] = {}
        self._requests = itertools.count()
        self._resend: collections.deque[Pending] = collections.deque()
        self._open = 0  # batches taken from the batch source and not yet completed
        self._closing = False
        self._failure: BaseException | None = None
        self._clock = Clock()
        self._replies: queue.SimpleQueue[Reply | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._dispatch, name="triton-dispatch", daemon=True),
            threading.Thread(target=self._take_replies, name="triton-complete", daemon=True),
            threading.Thread(target=self._resend_lost, name="triton-resend", daemon=True),
            threading.Thread(target=self._probe, name="triton-probe", daemon=True),
            threading.Thread(target=self._watch_deadlines, name="triton-deadlines", daemon=True),
        ]
        # LoadGen's issue callback: the native put.
        self.issue_queries: Callable[[Sequence[Any]], None] = batches.put_queries

    def flush_queries(self) -> None:
        pass  # batches leave on size or timeout, as in the direct harness

    # Lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> TritonSUT:
        for server in self._servers:
            self._open_stream(server)
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._batches.close()
        self._threads[0].join()
        with self._lock:
            while self._open and self._failure is None:
                self._lock.wait(_WAIT_S)
            self._closing = True
            self._lock.notify_all()
        self._replies.put(None)
        for thread in self._threads[1:]:
            thread.join()
        for server in self._servers:
            server.stream.shut()
        if self._failure is not None and exc is None:
            raise RuntimeError("the Triton harness failed") from self._failure

    def to_json(self) -> dict[str, Any]:
        """result.json's "triton" entry: the servers, what each did, what was lost and re-sent."""
        with self._lock:
            servers = [server.to_json() for server in self._servers]
        return {
            "servers": servers,
            "model": self._served.describe(),
            "engine_key": self._served.engine_key,
            "response": self._response,
            "samples": STAGED if self._staged else "wire",
            "inflight_per_server": self._inflight,
            "timeout_s": self._timeout_s,
            "lost_servers": sum(1 for s in servers if s["lost"]),
            "resent_samples": sum(loss["resent_samples"] for s in servers for loss in s["lost"]),
        }

    # Sending ------------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        next_batch = self._batches.next_batch
        while (batch := next_batch()) is not None:
            with self._lock:
                self._open += 1
            self._send(Pending(batch, list(batch.sample_indices)))

    def _resend_lost(self) -> None:
        while True:
            with self._lock:
                while not self._resend and not self._closing:
                    self._lock.wait(_WAIT_S)
                if not self._resend:
                    return
                pending = self._resend.popleft()
            self._send(pending)

    def _send(self, pending: Pending) -> None:
        """To the least loaded live server with room; waits while all are busy, and while all are
        lost for up to the grace period (a server may come back)."""
        all_lost_since: float | None = None
        server: ServerState | None = None
        with self._lock:
            while self._failure is None:
                server = least_loaded(self._servers, self._inflight)
                if server is not None:
                    server.take(pending, self._clock.now())
                    attempt = pending.attempt
                    request_id = str(next(self._requests))
                    self._sent[request_id] = (server, pending, attempt)
                    break
                if any(s.alive for s in self._servers):
                    all_lost_since = None
                else:
                    now = self._clock.now()
                    all_lost_since = now if all_lost_since is None else all_lost_since
                    if now - all_lost_since >= self._grace_s:
                        self._all_lost()
                        continue
                self._lock.wait(_WAIT_S)
        if server is None:  # the run failed
            self._answer_empty(pending)
            return
        try:
            if self._staged:
                batch = wire.ids_input(pending.indices)
            else:
                batch = wire.samples_input(self._store.gather(pending.indices))
            server.stream.send(request_id, [batch])
        except Exception as error:  # any failure to send is that server's loss: re-sent
            with self._lock:
                self._sent.pop(request_id, None)
            self._answered(server, pending, attempt, None, error)

    def _open_stream(self, server: ServerState) -> None:
        with self._lock:
            server.stream_number += 1
            number = server.stream_number
        clock = self._clock

        # On the stream's thread: stamp the answer and hand it over (see the module's doc). The
        # stamp is one attribute store, read by the watchdog: no lock on this thread.
        def hand_over(request_id: str | None, result: Any, error: Any) -> None:
            if request_id is not None and number == server.stream_number:
                server.heard_at_s = clock.now()
            self._replies.put((server, number, request_id, result, error))

        server.stream.open(hand_over)

    def _take_replies(self) -> None:
        while (reply := self._replies.get()) is not None:
            server, number, request_id, result, error = reply
            with self._lock:
                sent = self._sent.pop(request_id, None) if request_id is not None else None
                if sent is None:
                    # The stream's own error (no request id): the server's, if it is the stream
                    # in use; a closed stream's cancellation is not.
                    if error is not None and server.alive and number == server.stream_number:
                        self._lose(server, wire.describe_error(error))
                    continue
            self._answered(*sent, result, error)

    def _answered(
        self, server: ServerState, pending: Pending, attempt: int, result: Any, error: Any
    ) -> None:
        """A reply (on the completer thread): complete the batch, or lose the server."""
        with self._lock:
            if pending.done or pending.attempt != attempt:
                return  # answered by another server after this one was lost
            if error is not None:
                self._lose(server, wire.describe_error(error))
                return
            pending.done = True
            server.release(pending)
            server.completed_batches += 1
            server.completed_samples += len(pending.indices)
            self._lock.notify_all()
        try:
            rows = wire.rows(result, self._served, self._response)
            if self._response != OUTPUT:  # the servers' answer: postprocessed there
                self._complete(pending, rows)
                return
            rows, row_bytes = responses(
                rows,
                pending.indices,
                self._postprocess,
                self._sized_postprocess,
                self._response_bytes,
            )
            self._complete(pending, rows, row_bytes)
        except BaseException as failure:
            with self._lock:
                self._failure = self._failure or failure
            self._complete(pending, np.empty((len(pending.indices), 0), dtype=np.uint8))

    def _complete(
        self,
        pending: Pending,
        rows: npt.NDArray[np.generic],
        row_bytes: npt.NDArray[np.integer[Any]] | None = None,
    ) -> None:
        try:
            if row_bytes is not None:
                complete(pending.batch, rows, row_bytes)
            elif self._response_bytes is None:
                complete(pending.batch, rows)
            else:
                complete(pending.batch, rows, self._response_bytes[pending.indices])
        finally:
            with self._lock:
                self._open -= 1
                self._lock.notify_all()

    def _answer_empty(self, pending: Pending) -> None:
        with self._lock:
            if pending.done:
                return
            pending.done = True
        self._complete(pending, np.empty((len(pending.indices), 0), dtype=np.uint8))

    def _lose(self, server: ServerState, reason: str) -> None:
        """(Under the lock.) The server is lost: every batch it held goes to the others; the prober
        closes its stream."""
        if server.alive:
            for moved in server.lose(self._clock.now(), reason):
                moved.attempt += 1
                self._resend.append(moved)
            for request_id in [key for key, sent in self._sent.items() if sent[0] is server]:
                del self._sent[request_id]
        self._lock.notify_all()

    # Staged samples -----------------------------------------------------------------------------
    def samples_loaded(self, indices: Sequence[int]) -> None:
        """LoadGen now holds these samples (before timing): with staged samples, every live
        server is told to hold them too; one that cannot, or holds other data, is lost."""
        if not self._staged:
            return
        digest = bytes(samples_digest(self._store, indices)) if indices else b""
        with self._lock:
            self._held, self._held_digest = list(indices), digest
            live = [server for server in self._servers if server.alive]
        for server in live:
            reason = self._hold_on(server)
            if reason is not None:
                with self._lock:
                    self._lose(server, reason)

    def _hold_on(self, server: ServerState) -> str | None:
        """Have the server hold the current set; why it could not (None: it holds it)."""
        with self._lock:
            held, expected = self._held, self._held_digest
        if not held:
            return None  # nothing loaded yet (or between LoadGen's sets): nothing to hold
        try:
            digest = wire.hold(server.address, self._served, held, HOLD_TIMEOUT_S)
        except Exception as error:
            return f"could not hold the loaded samples: {wire.describe_error(error)}"
        if bytes(digest) != expected:
            return "holds other samples than this run (its preprocessed data differs)"
        return None

    def _all_lost(self) -> None:
        """Every server lost for the grace period: record it and end the run (under the lock)."""
        losses = "; ".join(
            f"{s.address} at {s.losses[-1].at_s:.1f} s ({s.losses[-1].reason})"
            for s in self._servers
            if s.losses
        )
        message = (
            f"every Triton server was lost and none came back within {self._grace_s:g} s: {losses}"
        )
        self._failure = RuntimeError(message)
        self._lock.notify_all()
        self._on_all_lost(message)

    # Servers coming back ------------------------------------------------------------------------
    def _watch_deadlines(self) -> None:
        """A stream has no deadline of its own: a live server that holds batches and has answered
        nothing for `timeout_s` is lost (a hung host that keeps its connections open). Silence, not
        a batch's age: a loaded server still answering its queue in order is not lost."""
        with self._lock:
            while not self._closing:
                now = self._clock.now()
                for server in self._servers:
                    silent_since = server.silent_since() if server.alive else None
                    if silent_since is not None and now - silent_since > self._timeout_s:
                        self._lose(
                            server,
                            f"DEADLINE_EXCEEDED: no answer for {self._timeout_s:g} s "
                            f"with {len(server.inflight)} batch(es) in flight",
                        )
                self._lock.wait(DEADLINE_CHECK_S)

    def _probe(self) -> None:
        """Every half second: a lost server's stream is closed, and the server, once it answers
        again with the same identity (and holds the run's samples), gets a new stream and work."""
        closed: set[ServerState] = set()  # the lost servers whose stream is closed
        while True:
            with self._lock:
                if self._closing:
                    return
                lost = [s for s in self._servers if not s.alive]
            for server in lost:
                if server not in closed:
                    server.stream.close()
                    closed.add(server)
                if not wire.serves(server.address, self._served, min(self._timeout_s, 2.0)):
                    continue
                if self._staged and self._hold_on(server) is not None:
                    continue  # back, but without the samples: asked again at the next probe
                self._open_stream(server)
                closed.discard(server)
                with self._lock:
                    server.come_back(self._clock.now())
                    self._lock.notify_all()
            with self._lock:
                self._lock.wait(PROBE_INTERVAL_S)
