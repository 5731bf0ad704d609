"""File digests read in blocks (models are ~100 MB), several algorithms in one pass."""

from __future__ import annotations

import hashlib
from pathlib import Path

_BLOCK = 1 << 20


def file_digests(path: Path, *algorithms: str) -> tuple[str, ...]:
    """The hex digest of the file for each algorithm, reading it once.

    Integrity, not security: usedforsecurity=False keeps md5 available on FIPS-mode hosts.
    """
    digests = [hashlib.new(name, usedforsecurity=False) for name in algorithms]
    with path.open("rb") as stream:
        while block := stream.read(_BLOCK):
            for digest in digests:
                digest.update(block)
    return tuple(digest.hexdigest() for digest in digests)


def file_sha256(path: Path) -> str:
    return file_digests(path, "sha256")[0]
