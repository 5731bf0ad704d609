"""The files of ours in a run's log directory, by name: run_harness writes them, and staging, the
preflight check and the report read them. A leaf module, so that readers need not import the
harness. (LoadGen's own files are named in loadgen/results.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULT_FILE = "result.json"  # our record of the run
USER_CONF_FILE = "user.conf"  # the LoadGen settings the run applied, as a submission shows them
ACCURACY_TXT = "accuracy.txt"  # accuracy runs: the metric in MLCommons' words (and its name there)


def result_record(run_dir: Path) -> dict[str, Any]:
    """A run's result.json; {} where there is none (a run that did not finish)."""
    try:
        record: dict[str, Any] = json.loads((run_dir / RESULT_FILE).read_text())
        return record
    except (OSError, json.JSONDecodeError):
        return {}
