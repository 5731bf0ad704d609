"""Turn raw settings (a config class's attributes, a JSON file's keys) into a checked HarnessSettings.

Both sources go through this one function, so a class and a file get the same checks and the same
one-line errors: unknown name (with the closest known one), wrong type or value, wrong scenario.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mlperf_harness.config.fields import (
    HarnessSettings,
    scenario_problem,
    setting_names,
    value_problem,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario


@dataclass(frozen=True)
class RawSetting:
    """One setting as written, before it is checked."""

    name: str
    value: object  # None: not set here (inherit)
    where: str  # how an error names its source: a config class, or `file: benchmark.scenario`


def parse_settings(raw_settings: Iterable[RawSetting], scenario: Scenario) -> HarnessSettings:
    """Check every raw setting against the table of fields for `scenario`; the first problem raises."""
    known_names = setting_names()
    values: dict[str, Any] = {}  # Any: each value was checked against its field's type below
    for raw in raw_settings:
        if raw.name not in known_names:
            raise HarnessError(f"{raw.where}: unknown setting {raw.name!r}{_suggestion(raw.name)}")
        if raw.value is None:
            continue
        problem = value_problem(raw.name, raw.value) or scenario_problem(raw.name, scenario)
        if problem is not None:
            raise HarnessError(f"{raw.where}: {problem}")
        values[raw.name] = raw.value
    return HarnessSettings(**values)


def _suggestion(name: str) -> str:
    close = difflib.get_close_matches(name, setting_names(), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return " (the table of settings: describe_fields(), or --help)"
