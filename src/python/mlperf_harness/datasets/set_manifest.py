"""The manifest of a preprocessed set (SQuAD's, CNN-DailyMail's): a versioned JSON file written last
into the set's directory, listing each file's size and sha256, read back and checked the same way
for every set so that a damaged set is one line naming what is wrong."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

MANIFEST_NAME = "manifest.json"

Damaged = Callable[[Path, str], HarnessError]  # (the set's directory, what is wrong) -> the line


def read_manifest(
    directory: Path, what: str, version: int, keys: Iterable[str], damaged: Damaged
) -> dict[str, Any]:
    """The manifest of the set in directory (`what` names the set in an error line), checked to
    be of `version` and to hold `keys`."""
    if not directory.is_dir():
        raise HarnessError(f"no {what}: {directory} is not a directory")
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_bytes())
    except FileNotFoundError:
        raise damaged(directory, f"it has no {MANIFEST_NAME}") from None
    except (OSError, ValueError) as error:
        raise damaged(directory, f"cannot read {MANIFEST_NAME}: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("manifest_version") != version:
        raise damaged(directory, f"{MANIFEST_NAME} is not a version {version} manifest")
    for key in keys:
        if key not in manifest:
            raise damaged(directory, f"{MANIFEST_NAME} has no {key!r}")
    return manifest


def check_files(
    directory: Path, manifest: dict[str, Any], expected: set[str], damaged: Damaged
) -> None:
    """Every file the manifest lists (exactly `expected`), whole: its size, then its sha256."""
    files = manifest["files"]
    if not isinstance(files, dict) or set(files) != expected:
        raise damaged(directory, f"{MANIFEST_NAME} does not list its files")
    for name, record in sorted(files.items()):
        path = directory / name
        try:
            size = path.stat().st_size
        except OSError:
            raise damaged(directory, f"{name} is missing") from None
        wanted = record.get("bytes") if isinstance(record, dict) else None
        if size != wanted:
            raise damaged(directory, f"{name} has {size} bytes, not {wanted}")
        if file_sha256(path) != record.get("sha256"):
            raise damaged(directory, f"{name} differs from what was written (sha256)")


def file_records(directory: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """What a manifest records of each file written: its size and sha256."""
    return {
        name: {"bytes": (directory / name).stat().st_size, "sha256": file_sha256(directory / name)}
        for name in names
    }


def finish_set(content: Path, manifest: dict[str, Any], output_dir: Path, staging: Path) -> None:
    """Write the manifest into a set made in `content` (inside `staging`), last: a directory with a
    manifest is complete; then put the set at output_dir, replacing what was there."""
    (content / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
    if output_dir.exists():
        # Out of the way first (removed with the staging directory): os.replace cannot put a
        # directory over a non-empty one.
        os.replace(output_dir, staging / "replaced")
    os.replace(content, output_dir)
