"""What lets an interrupted submission resume: each finished step leaves a record of the inputs it
was made from (a fingerprint); a step whose record matches its inputs now is not run again.

A run's inputs are its arguments, the settings they resolve to, the files the benchmark reads that no
argument names (default model and data paths: size and time of change), and the harness code that
makes runs (every module of the package but the submission and report code, which do not change a
run). A verification's inputs are the results of the runs it compares.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import mlperf_harness
from mlperf_harness.atomic import write_json_atomic

RECORD_DIR = ".steps"
_NOT_RUN_INPUTS = ("submission", "report")  # packages whose code does not change a run's result


@cache
def harness_code_digest() -> str:
    root = Path(mlperf_harness.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in _NOT_RUN_INPUTS:
            continue
        digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def file_stamp(path: Path) -> list[Any]:
    """Cheap identity of an input file: a changed or replaced file changes its stamp."""
    try:
        info = path.stat()
    except OSError:
        return [str(path), None]
    return [str(path), info.st_size, info.st_mtime_ns]


def file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def fingerprint(parts: Iterable[Any]) -> str:
    return hashlib.sha256(json.dumps(list(parts), sort_keys=True, default=str).encode()).hexdigest()


def run_fingerprint(argv: Sequence[str], settings_text: str, input_files: Iterable[Path]) -> str:
    return fingerprint(
        [list(argv), settings_text, [file_stamp(p) for p in input_files], harness_code_digest()]
    )


class StepRecords:
    """The records of one submission's finished steps, one small JSON file each."""

    def __init__(self, runs_root: Path) -> None:
        self._dir = runs_root / RECORD_DIR

    def _path(self, step_id: str) -> Path:
        return self._dir / f"{step_id}.json"

    def finished(self, step_id: str, wanted: str) -> dict[str, Any] | None:
        """The step's record if it finished from the same inputs, else None."""
        try:
            record: dict[str, Any] = json.loads(self._path(step_id).read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return record if record.get("fingerprint") == wanted else None

    def forget(self, step_id: str) -> None:
        self._path(step_id).unlink(missing_ok=True)

    def mark_finished(self, step_id: str, fingerprint_: str, wall_s: float) -> None:
        write_json_atomic(
            self._path(step_id),
            {
                "fingerprint": fingerprint_,
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "wall_s": round(wall_s, 3),
            },
        )
