"""Calibration maxima as a small JSON artifact of their own (the FP8 ResNet and RetinaNet engines'
activation maxima, GPT-J's static FP8 scales): each named tensor's or layer's largest |x| over the
calibration samples, beside the fields that say what they were measured on. Written whole (a
temporary file renamed into place); read back only where every field matches and every maximum is
there, finite and not negative: anything else is reported in one line and the caller calibrates
again, so a damaged or foreign file is never used. numpy- and torch-free."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.atomic import write_bytes_atomic


def read_amax(
    path: Path, names: Sequence[str], fields: Mapping[str, str], what: str
) -> dict[str, float] | None:
    """The maxima `path` holds for `names` where its record's `fields` are these, else None: absent
    silently, unusable with a notice on stderr naming `what` the file holds."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_bytes())
        for field, wanted in fields.items():
            if record.get(field) != wanted:
                raise ValueError(f"its {field} is {record.get(field)!r}, not {wanted!r}")
        amax = {str(name): float(value) for name, value in record["amax"].items()}
        missing = [name for name in names if name not in amax]
        if missing:
            raise ValueError(f"no maximum for {len(missing)} of {len(names)}, {missing[0]!r} first")
        if not all(math.isfinite(amax[name]) and amax[name] >= 0 for name in names):
            raise ValueError("a maximum that is negative or not finite")
    except Exception as error:  # any malformed content: json, keys, types, values
        print(
            f"{what} {path} unusable ({type(error).__name__}: {error}); calibrating again",
            file=sys.stderr,
        )
        return None
    return {name: amax[name] for name in names}


def write_amax(path: Path, amax: Mapping[str, float], fields: Mapping[str, str]) -> None:
    """The record `fields` and `amax`, written whole at `path`."""
    record = {**fields, "amax": dict(amax)}
    write_bytes_atomic(path, json.dumps(record, indent=1, sort_keys=True).encode())
