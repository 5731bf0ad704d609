from __future__ import annotations

import hashlib
from pathlib import Path

from mlperf_harness.hashing import file_digests, file_sha256


def test_digests_in_one_pass_match_hashlib(tmp_path: Path) -> None:
    data = bytes(range(256)) * 9000  # more than one read block
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert file_digests(path, "md5", "sha256") == (
        hashlib.md5(data).hexdigest(),
        hashlib.sha256(data).hexdigest(),
    )
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
