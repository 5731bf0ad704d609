"""Reading a JSON file the harness or its tools wrote, with one line for whatever is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError


def read_json(path: Path) -> Any:
    """The file's JSON value; a missing or unreadable file, or one that is not JSON, is one
    HarnessError naming the path. Its shape is the caller's to check."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessError(f"cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise HarnessError(f"{path} is not JSON: {error}") from None
