"""StartTest's threads are reused, never ended (loadgen/threads.py says why)."""

from __future__ import annotations

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
