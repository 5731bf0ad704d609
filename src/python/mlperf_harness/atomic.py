"""Write files so that a reader never sees half of one: write a temporary sibling, then rename."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

# mkstemp creates files 0600; a file written here should get the mode a plain open() would give.
# Reading the umask means setting it, so it is read once, at import, before any thread starts.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
