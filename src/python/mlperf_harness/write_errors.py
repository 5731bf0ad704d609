"""One line for a write that fails for a reason the user can fix: a full disk, a quota, a read-only
or wrong path. It names the path and the cause, where a traceback, or a library's own message (ONNX
Runtime reports a full disk as `INVALID_PROTOBUF: Protobuf serialization failed`), would not.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from mlperf_harness.errors import HarnessError

# Causes outside the program: the disk, the file system, the path the user gave. Any other errno is
# more likely a bug and keeps its traceback.
_USER_FIXABLE = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)
_OUT_OF_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_PROBE_BYTES = 1 << 20  # what a directory must still take for a failed write not to be blamed on it


def is_user_fixable(error: OSError) -> bool:
    return error.errno in _USER_FIXABLE


def write_error(error: OSError, path: Path, verb: str = "write") -> HarnessError:
    """The one-line error for a failed write of `path` (or of the deeper path the OS names)."""
    # os.write() names no file; open() and mkdir() name the one that failed, which may be deeper.
    named = Path(error.filename) if isinstance(error.filename, str) else path
    cause = error.strerror or str(error)
    cause = cause[:1].lower() + cause[1:]
    if error.errno in (errno.ENOTDIR, errno.EEXIST):
        blocker = _file_in_the_way(named)
        if blocker is not None:
            # Name what was to be written: the OS may name the blocking file itself.
            named, cause = path, f"{blocker} is a file, not a directory"
    hint = ""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "; free some space there (or choose another --scratch_path) and run again"
    elif error.errno == errno.EFBIG:
        hint = " (a file size limit: the file system's, or the shell's `ulimit -f`)"
    return HarnessError(f"cannot {verb} {named}: {cause}{hint}")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a user-fixable OSError in the block into one HarnessError line about `path`."""
    try:
        yield
    except OSError as error:
        if not is_user_fixable(error):
            raise
        raise write_error(error, path) from error


def space_problem(directory: Path) -> OSError | None:
    """Why `directory` cannot take another megabyte now (full, over quota, read-only), or None.

    For failures a library reports without an errno: if the disk is the cause, writing here fails
    the same way, and that error names the cause.
    """
    probe = directory / f".space-probe-{os.getpid()}.tmp"
    try:
        with open(probe, "wb") as file:
            block = bytes(1 << 16)
            for _ in range(_PROBE_BYTES // len(block)):
                file.write(block)
            file.flush()
            os.fsync(file.fileno())
    except OSError as error:
        return error if error.errno in _OUT_OF_SPACE | {errno.EROFS} else None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None


def check_directory_path(path: Path, what: str) -> None:
    """Refuse a directory path that is, or lies under, an existing file (e.g. --scratch_path)."""
    blocker = _file_in_the_way(path)
    if blocker == path:
        raise HarnessError(f"{what} {path} is a file, not a directory")
    if blocker is not None:
        raise HarnessError(f"{what} {path} cannot be a directory: {blocker} is a file")


def _file_in_the_way(path: Path) -> Path | None:
    """The first existing ancestor-or-self of `path` that is not a directory."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None
