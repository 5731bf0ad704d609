"""A server's silence, which the Triton client's deadline reads: it counts from the later of its
oldest batch's send and its last answer, so a server answering a long queue in order stays live."""

from __future__ import annotations

from typing import Any, cast

from mlperf_harness.triton.addresses import ServerAddress
from mlperf_harness.triton.server_pool import Pending, ServerState


def pending(indices: list[int]) -> Pending:
    return Pending(batch=cast(Any, None), indices=indices)


def test_a_server_without_work_is_never_silent() -> None:
    server = ServerState(ServerAddress("127.0.0.1", 1), stream=None)
    assert server.silent_since() is None
    first = pending([0, 1])
    server.take(first, 5.0)
    server.release(first)
    assert server.silent_since() is None


def test_silence_counts_from_the_oldest_send_until_an_answer_comes() -> None:
    server = ServerState(ServerAddress("127.0.0.1", 1), stream=None)
    first, second = pending([0]), pending([1])
    server.take(first, 1.0)
    server.take(second, 2.0)
    assert server.silent_since() == 1.0  # nothing heard yet: the oldest batch's send
    server.heard_at_s = 4.0  # an answer (the first batch's) arrived
    server.release(first)
    assert server.silent_since() == 4.0  # the second batch waited in the queue, not in silence
    server.take(pending([2]), 9.0)
    server.release(second)
    assert server.silent_since() == 9.0  # a send after the last answer
