from __future__ import annotations

import os
from pathlib import Path

from mlperf_harness.atomic import write_bytes_atomic, write_json_atomic


def test_writes_whole_files_with_the_usual_mode(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.bin"
    write_bytes_atomic(target, b"abc")
    assert target.read_bytes() == b"abc"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    write_json_atomic(target, {"a": 1})
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in target.parent.iterdir()] == ["file.bin"]  # no temporary left behind
