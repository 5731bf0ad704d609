"""One lock per thing a run builds in the scratch (the stand-in, preprocessed samples, an engine, a
download), so that runs sharing a scratch build each thing once: the first builds it, the others
wait for it (saying so, once) and then use what it built.

Only missing work takes a lock: `build_once` looks without one first, so a scratch that already
holds everything is only read (it may be read-only, or another user's). The lock is an flock on a
small file beside the target, `.<name>.lock`. The kernel releases it when its holder ends, however
it ends, so a killed run never leaves a stale lock. Lock files are never removed: removing one while
another process waits on it would let a third process lock a new file of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl  # POSIX only, like the hosts this runs on
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from mlperf_harness.write_errors import writing

T = TypeVar("T")


def lock_path(target: Path) -> Path:
    """Beside the target, so that it can lock a file or directory that does not exist yet."""
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def exclusive(target: Path, activity: str) -> Iterator[None]:
    """Hold target's lock; if another process holds it, say so on stderr once, then wait for it.

    activity completes "waiting for another run to finish ..." (e.g. "building the engine").
    """
    path = lock_path(target)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"waiting for another run to finish {activity}: {target} ...",
                file=sys.stderr,
                flush=True,
            )
            fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C still interrupts the wait
        yield
    finally:
        os.close(fd)  # releases the lock


def build_once(
    target: Path, activity: str, find: Callable[[], T | None], build: Callable[[], T]
) -> T:
    """What find() returns when the target is there; else build() under the target's lock, unless
    the run we waited for built it meanwhile (find() again once the lock is ours)."""
    found = find()
    if found is not None:
        return found
    with exclusive(target, activity):
        found = find()
        return found if found is not None else build()


def _open(path: Path) -> int:
    # The umask decides the lock file's mode, as for every file in the scratch.
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except PermissionError:
        # Another user's lock file that the umask left read-only to us: flock needs no write access.
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
