"""Ctrl-C and SIGTERM during a run: end the process within a moment, leaving logs that say so.

LoadGen has no way to stop a test: StartTest blocks until the test is over, and its threads cannot be
cancelled. While the main thread sits inside StartTest, Python's signal handlers cannot run at all
(they run on the main thread, between bytecodes), so Ctrl-C used to wait for the end of the run and
then unwind through live LoadGen handles (`terminate called ...`). Here StartTest runs on a helper
thread while the main thread waits in short slices, so a handler runs at once; it marks the log
directory as interrupted and leaves with os._exit: no `finally` block or atexit hook runs, so nothing
can write a result.json, and no handle is destroyed under LoadGen's feet.

Where native code holds the GIL for long (LoadGen converting a large Offline query), the handler
cannot run at all; a watchdog process (loadgen/watchdog.py) then ends the run a second later, or at
once at a second signal, with SIGKILL (exit status 137 instead of 130).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeVar

from mlperf_harness.loadgen import threads, watchdog

INTERRUPTED_FILE = "INTERRUPTED"  # in a log directory: the run there did not finish
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C; used for SIGTERM too
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_WAIT_SLICE_S = 0.05  # how long the main thread waits before it lets a pending handler run
_WATCHDOG_START_S = 10.0  # the most a run waits for its watchdog to listen (it takes ~50 ms)

T = TypeVar("T")

_active: list[tuple[Path, str]] = []  # the guarded log directories, innermost last


def _leave(signum: int, _frame: FrameType | None) -> NoReturn:
    # A second signal while this one is handled (a hung disk under the log directory) kills the
    # process at once: the kernel's default action needs neither the GIL nor this code.
    for number in _SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    log_dir, prog = _active[-1]
    name = signal.Signals(signum).name
    now = time.time()
    stamp = (
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(now))}.{int(now * 1000) % 1000:03d}"
    )
    note = f"interrupted by {name} at {stamp}: these logs are partial"
    marked = ""
    try:
        (log_dir / INTERRUPTED_FILE).write_text(note + ", not a finished run\n")
    except OSError as error:
        marked = f" (could not mark it: {error.strerror or error})"
    print(
        f"{prog}: interrupted by {name}: the run did not finish; partial logs in {log_dir}{marked}",
        file=sys.stderr,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a broken stream must not keep us here
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


@contextmanager
def exit_on_signal(log_dir: Path, prog: str) -> Iterator[None]:
    """Within the block, SIGINT or SIGTERM marks `log_dir` as interrupted, prints one line and ends
    the process with exit status 130. Nested blocks report their own directory. Outside the main
    thread (where Python cannot set handlers) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {number: signal.getsignal(number) for number in _SIGNALS}
    _active.append((log_dir, prog))
    try:
        with _watched(log_dir, prog):
            for number in _SIGNALS:
                signal.signal(number, _leave)
            yield
    finally:
        _active.pop()
        for restored, handler in previous.items():
            signal.signal(restored, handler)


@contextmanager
def _watched(log_dir: Path, prog: str) -> Iterator[None]:
    """A watchdog process reading the interpreter's wakeup pipe for the block's duration."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # set_wakeup_fd's requirement: a signal must never block
    ready_read, ready_write = os.pipe()  # closed by the watchdog once it listens
    try:
        # A session of its own: Ctrl-C at the terminal reaches the run, not its watchdog.
        process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-c",
                inspect.getsource(watchdog),
                str(read_end),
                str(ready_write),
                str(os.getpid()),
                str(log_dir),
                INTERRUPTED_FILE,
                prog,
            ],
            pass_fds=(read_end, ready_write),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        process = None  # no watchdog (no interpreter to start): the handler alone still works
    finally:
        os.close(read_end)
        os.close(ready_write)
    # Its interpreter starts now, not during the timed run, where it would compete for the CPU.
    select.select([ready_read], [], [], _WATCHDOG_START_S)
    os.close(ready_read)
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        with contextlib.suppress(OSError):  # a watchdog that is gone needs no word
            os.write(write_end, watchdog.DONE)
        os.close(write_end)
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def call_interruptibly(body: Callable[[], T]) -> T:
    """`body()` on a helper thread, the calling thread waiting in short slices so that the signal
    handlers installed by `exit_on_signal` run within moments, whatever `body` blocks in."""
    if threading.current_thread() is not threading.main_thread() or not _active:
        return body()  # no handler of ours would run: nothing to wait for
    outcome: list[T] = []
    # A thread that outlives the test (loadgen/threads.py): a StartTest thread must never exit.
    task = threads.start(lambda: outcome.append(body()), name="loadgen-test")
    while task.is_alive():
        task.join(_WAIT_SLICE_S)
    if task.error is not None:
        raise task.error
    return outcome[0]
