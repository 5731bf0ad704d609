"""Write files so that a reader never sees half of one: write a temporary sibling, then rename.

Temporary files are named ".<name>.<random>.tmp". A process killed mid-write leaves one behind; the
next process that holds the lock of that directory (mlperf_harness.scratch_lock) removes it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mlperf_harness.write_errors import writing

# mkstemp creates files 0600 and mkdtemp directories 0700; what is written here should get the mode
# a plain open() or mkdir() would give, so that the umask decides who else may read it (a scratch
# shared between users). Reading the umask means setting it, so it is read once, at import, before
# any thread starts.
_UMASK = os.umask(0o022)
os.umask(_UMASK)
TEMP_SUFFIX = ".tmp"


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write data to path whole or not at all; a full disk or a wrong path is one HarnessError."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent
        )
        try:
            os.fchmod(fd, 0o666 & ~_UMASK)
            with os.fdopen(fd, "wb") as tmp:
                tmp.write(data)
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_bytes_atomic(path, (json.dumps(data, indent=2, sort_keys=False) + "\n").encode())


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode())


def staging_directory(parent: Path, prefix: str) -> Path:
    """A new empty directory in parent, to be filled and then renamed into place; the umask's mode."""
    with writing(parent):
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        os.chmod(staging, 0o777 & ~_UMASK)
    return staging


def remove_stale_staging(parent: Path, name: str, announce: str) -> None:
    """Delete the staging directories (".<name>.*", see staging_directory) that killed writers of
    `name` left in parent, printing `announce` and each path. Call it only while holding name's
    lock, so that no live writer's directory goes."""
    try:
        entries = list(os.scandir(parent))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name.startswith(f".{name}.") and entry.is_dir(follow_symlinks=False):
            print(f"{announce}: {entry.path}", file=sys.stderr)
            shutil.rmtree(entry.path, ignore_errors=True)


def remove_stale_temporaries(directories: Iterable[Path]) -> None:
    """Delete what killed writers left in these directories: temporary files (".<name>.*.tmp").
    Call it only while holding the directories' lock, so that no live writer's file goes."""
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    Path(entry.path).unlink(missing_ok=True)
