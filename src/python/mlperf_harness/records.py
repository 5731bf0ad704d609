"""Build records: a dataclass kept as JSON beside what a step built (written with write_json_atomic),
read back by later runs to skip the step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def read_record(cls: type[T], path: Path) -> T | None:
    """The record at path, or None when it is absent, damaged or of another version (other
    fields): the caller then builds again."""
    try:
        fields: Any = json.loads(path.read_text())
        return cls(**fields)
    except (OSError, ValueError, TypeError):
        return None
