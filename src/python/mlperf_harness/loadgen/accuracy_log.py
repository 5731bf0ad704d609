"""LoadGen's accuracy log (`mlperf_log_accuracy.json`) read once, for every scorer and the TEST01
verification: a JSON list of {"qsl_idx": <sample index>, "data": "<response bytes as hex>"}, in the
order LoadGen logged them (a sample may appear more than once). A log of another shape is one line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class LoggedResponse:
    qsl_idx: int
    hex: str  # as logged: MLCommons' TEST01 compares and copies responses in this form
    data: bytes


def read_accuracy_log(path: Path) -> list[LoggedResponse]:
    try:
        raw = json.loads(path.read_bytes())
    except OSError as error:
        raise HarnessError(
            f"cannot read LoadGen accuracy log {path}: {error.strerror or error}"
        ) from error
    except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
        raise HarnessError(
            f"cannot read LoadGen accuracy log {path}: is not JSON: {error}"
        ) from error
    if not isinstance(raw, list):
        raise HarnessError(f"{path} is not a LoadGen accuracy log: not a list of responses")
    responses = []
    for number, entry in enumerate(raw):
        where = f"{path}: response {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
            raise HarnessError(f'{where} is not {{"qsl_idx": <int>, "data": "<hex>"}}')
        index = entry.get("qsl_idx")
        if isinstance(index, bool) or not isinstance(index, int):
            raise HarnessError(f"{where} has no integer qsl_idx")
        try:
            data = bytes.fromhex(entry["data"])
        except ValueError:
            raise HarnessError(f"{where} (qsl_idx {index}): data is not hexadecimal") from None
        responses.append(LoggedResponse(index, entry["data"], data))
    return responses
