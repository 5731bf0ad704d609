"""A decoder stand-in's files in the scratch: built once (runs sharing the scratch wait for one
build), found again by its record, whose model hash must match the model file's."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mlperf_harness.atomic import remove_stale_temporaries, write_json_atomic
from mlperf_harness.hashing import file_sha256
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once


class Built(Protocol):
    """What a decoder stand-in's build leaves: its files and its record."""

    @property
    def model(self) -> Path: ...
    @property
    def tokenizer_dir(self) -> Path: ...
    @property
    def data(self) -> Path: ...
    @property
    def record(self) -> Any: ...


class Record(Protocol):
    @property
    def sha256(self) -> str: ...


R = TypeVar("R", bound=Record)


def ensure_built(
    work_dir: Path,
    model: Path,
    needed: Sequence[Path],
    record_type: type[R],
    record_path: Path,
    activity: str,
    announce: str,
    build: Callable[[], R],
) -> R:
    """The record of the stand-in in `work_dir` (its model and the `needed` files there, the
    record's hash that of the model); else `build()` it, saying `announce` first, and keep its
    record (written last: an interrupted build leaves no record, so the next run builds again)."""

    def find() -> R | None:
        if not (model.is_file() and all(path.is_file() for path in needed)):
            return None
        record = read_record(record_type, record_path)
        if record is not None and record.sha256 == file_sha256(model):
            return record
        return None

    def make() -> R:
        remove_stale_temporaries([work_dir])
        print(announce, file=sys.stderr)
        record = build()
        fields: Any = dataclasses.asdict(record)  # type: ignore[call-overload]
        write_json_atomic(record_path, fields)
        return record

    return build_once(work_dir, activity, find, make)
