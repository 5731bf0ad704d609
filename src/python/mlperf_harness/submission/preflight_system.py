"""The preflight check of systems/<system>.json and each scenario's measurements.json: every
field the v6.1 checker requires present, the meaningful ones not empty (the checker tests
truthiness, so an integer 0 counts as empty there: staging writes strings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlperf_harness.submission.preflight_problem import Kind, Problems
from mlperf_harness.submission.system_description import description_problems

MEASUREMENTS_FIELDS = (
    "input_data_types",
    "retraining",
    "starting_weights_filename",
    "weight_data_types",
    "weight_transformations",
)


def check_system_json(
    path: Path, description: dict[str, Any], division: str, submitter: str, problems: Problems
) -> None:
    # Staging's own completeness rules (system_description), which are the checker's and a little
    # stricter: every value text, so an integer 0 is caught before the checker calls it empty.
    for phrase in description_problems(description, division=division, submitter=submitter):
        problems.add(path, phrase, Kind.SYSTEM)


def check_measurements(path: Path, problems: Problems) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        problems.add(path, f"cannot be read as JSON: {error}", Kind.MEASUREMENTS)
        return
    if not isinstance(data, dict):
        problems.add(path, "is not a JSON object", Kind.MEASUREMENTS)
        return
    for field in MEASUREMENTS_FIELDS:
        if field not in data:
            problems.add(path, f"{field} is missing", Kind.MEASUREMENTS)
        elif not data[field]:
            problems.add(path, f"{field} is empty ({json.dumps(data[field])})", Kind.MEASUREMENTS)
