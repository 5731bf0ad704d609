"""The threads StartTest runs on live as long as the process: a finished test's thread waits for the
next test instead of exiting.

LoadGen keeps a log buffer per calling thread. When such a thread exits, LoadGen hands its buffer to
its IO thread to free once read, and a swap request still queued for that buffer can make the IO
thread touch it after it was freed: a segfault in `TlsLogger::SwapBuffers` (core dump, 2026-11-23),
seen in about one of six test-suite runs once each StartTest had a new thread that exited after its
test (loadgen/interruption.py runs StartTest off the main thread). Before that, StartTest ran on the
main thread, which never exits; a thread from here plays that part again. (Making the harness's
worker threads persistent too was tried and hung a run: LoadGen waited for latencies it never read;
they stay one set per test, as they always were.)
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

_idle: list[_Worker] = []  # workers waiting for a task, reused before a new one is started
_idle_lock = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child has only the thread that forked: the idle workers it inherited do not exist
    # there, and a task handed to one would wait forever (a forked run would hang). The lock may
    # have been held by a thread that is gone too.
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


class Task:
    """One function running on a persistent thread; `join` waits for it like Thread.join, and
    `error` holds what it raised (the thread itself goes on)."""

    def __init__(self, body: Callable[[], None]) -> None:
        self.body = body
        self.error: BaseException | None = None
        self._done = threading.Event()

    def join(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def finish(self) -> None:
        self._done.set()


class _Worker(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)  # waiting for work must never keep the process alive
        self.inbox: queue.SimpleQueue[Task] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            task = self.inbox.get()
            try:
                task.body()
            except BaseException as error:  # the task's caller decides; the thread must live on
                task.error = error
            self.name = "loadgen-idle"
            with _idle_lock:
                _idle.append(self)
            task.finish()  # after it is idle again, so the caller's next task can reuse it


def start(body: Callable[[], None], name: str) -> Task:
    """Run `body` on an idle persistent thread (a new one if none is idle) and return at once."""
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        worker.start()
    worker.name = name
    task = Task(body)
    worker.inbox.put(task)
    return task
