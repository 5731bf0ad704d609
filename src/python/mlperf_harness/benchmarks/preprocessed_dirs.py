"""Where a run keeps a preprocessed set by default: one directory per set of inputs, so that two
data sets (or two tokenizers of one) never share, and clobber, one directory."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path


def keyed_preprocessed_dir(
    scratch: Path, dataset: str, name: str, made_from: Sequence[Path | str]
) -> Path:
    """<scratch>/preprocessed/<dataset>/<name>-<key>: `key` is the first 12 hex digits of the
    sha256 of `made_from`, one per line (resolved paths, and anything else that changes the set)."""
    key = hashlib.sha256("\n".join(str(part) for part in made_from).encode()).hexdigest()[:12]
    return scratch / "preprocessed" / dataset / f"{name}-{key}"
