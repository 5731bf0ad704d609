"""The watchdog beside a run: ends it when its own signal handler cannot run.

A Python signal handler runs only when the main thread gets the GIL, and native code can hold the
GIL for a long time: LoadGen's binding turns the whole Offline query into Python objects before the
harness sees it (about 3 us a sample on a 2-core machine: a minute for 20M samples). So the run
hands its signals to this separate process too, through the interpreter's wakeup pipe, whose bytes
the C-level handler writes without the GIL. If the run has not ended GRACE_S after a signal, or at a
second signal, the watchdog kills it, marks its log directory as interrupted and says so. If the run
dies without finishing (SIGKILL, the OOM killer), the watchdog marks the logs too.

This file is run as a program by a fresh interpreter (`python -I -c <source>`): standard library only.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

GRACE_S = 0.5  # the run's own handler exits within milliseconds when it can run at all
DONE = b"D"  # written by the run when it leaves its guarded part; no signal has this number


def _mark(log_dir: Path, marker: str, note: str) -> None:
    # Never blocking: the run may have died of a hung file system, which must not hang us too.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK
    try:
        fd = os.open(log_dir / marker, flags, 0o666)
        try:
            os.write(fd, (note + ", not a finished run\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except OSError:
        pass


def _name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def watch(pipe: int, pid: int, log_dir: Path, marker: str, prog: str) -> None:
    """Read the run's wakeup pipe until the run says it is done or goes away."""
    received: list[int] = []
    deadline: float | None = None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([pipe], [], [], timeout)
        if not ready:  # the grace period is over and the run is still there
            break
        data = os.read(pipe, 64)
        if not data:  # every copy of the write end is closed: the run has ended
            if not (log_dir / marker).exists():
                what = f"by {_name(received[0])}" if received else "(killed?)"
                _mark(log_dir, marker, f"the run ended {what} before it finished: logs partial")
                _say(f"{prog}: the run ended {what} before it finished; partial logs in {log_dir}")
            return
        if DONE in data:
            return
        received += list(data)
        if deadline is None:
            deadline = time.monotonic() + GRACE_S
        if len(received) > 1:
            break  # a second signal: at once
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if (log_dir / marker).exists():
        return  # the run's own handler got as far as marking the logs, and said so
    name = _name(received[0]) if received else "a signal"
    _mark(log_dir, marker, f"interrupted by {name}, ended by the watchdog: these logs are partial")
    _say(f"{prog}: interrupted by {name}: the run did not finish; partial logs in {log_dir}")


def main(argv: list[str]) -> None:
    pipe, ready, pid, log_dir, marker, prog = argv
    os.close(int(ready))  # the run waits for this before its timed part starts
    watch(int(pipe), int(pid), Path(log_dir), marker, prog)


if __name__ == "__main__":
    main(sys.argv[1:])
