"""StartTest's threads are reused, never ended (loadgen/threads.py says why)."""

from __future__ import annotations

import os
import threading

from mlperf_harness.loadgen import threads


def _ident_of_task() -> tuple[threads.Task, list[int]]:
    seen: list[int] = []
    task = threads.start(lambda: seen.append(threading.get_ident()), name="probe")
    task.join()
    return task, seen


def test_a_finished_task_leaves_its_thread_for_the_next() -> None:
    _, first = _ident_of_task()
    _, second = _ident_of_task()
    assert first == second
    assert any(t.ident == first[0] and t.is_alive() for t in threading.enumerate())


def test_tasks_running_together_get_threads_of_their_own() -> None:
    release = threading.Event()
    seen: list[int] = []

    def body() -> None:
        seen.append(threading.get_ident())
        release.wait(5)

    tasks = [threads.start(body, name=f"probe-{i}") for i in range(3)]
    release.set()
    for task in tasks:
        task.join(5)
        assert not task.is_alive()
    assert len(set(seen)) == 3


def test_an_error_is_handed_to_the_caller_and_the_thread_lives_on() -> None:
    def fail() -> None:
        raise ValueError("bad batch")

    failed = threads.start(fail, name="probe")
    failed.join(5)
    assert isinstance(failed.error, ValueError)
    task, seen = _ident_of_task()
    assert task.error is None and seen


def test_a_forked_child_starts_threads_of_its_own() -> None:
    _ident_of_task()  # an idle worker exists in this process
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a task must run, on a thread of the child
        try:
            task, seen = _ident_of_task_within(5.0)
            os.write(write_end, b"ok" if seen and not task.is_alive() else b"hung")
        finally:
            os._exit(0)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    assert os.read(read_end, 8) == b"ok" and status == 0
    os.close(read_end)


def _ident_of_task_within(timeout: float) -> tuple[threads.Task, list[int]]:
    seen: list[int] = []
    task = threads.start(lambda: seen.append(threading.get_ident()), name="probe")
    task.join(timeout)
    return task, seen
