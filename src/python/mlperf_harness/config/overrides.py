"""Settings written as JSON, `{benchmark: {scenario: {setting: value}}}`: a stub to fill in, and
its parse into checked settings. A custom system's file holds one such section.

null means "not set here" (inherit). Keys that start with `_` are notes for the reader ("_help")
and are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlperf_harness.config.fields import (
    HarnessSettings,
    applicable_settings,
    field_info,
    type_label,
)
from mlperf_harness.config.registry import ConfigRegistry
from mlperf_harness.config.validate import RawSetting, parse_settings
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

HELP_KEY = "_help"


@dataclass(frozen=True)
class ScenarioOverrides:
    benchmark: str
    scenario: Scenario
    settings: HarnessSettings


def overrides_stub(benchmarks: Sequence[str]) -> dict[str, Any]:
    """A JSON object to fill in: every setting that applies, null, with its help in a sibling `_help`."""
    stub: dict[str, Any] = {}
    for benchmark in benchmarks:
        per_scenario: dict[str, Any] = {}
        for scenario in Scenario:
            names = applicable_settings(scenario)
            section: dict[str, Any] = dict.fromkeys(names)
            section[HELP_KEY] = {
                name: f"{type_label(name)}: {field_info(name).help}" for name in names
            }
            per_scenario[scenario.value] = section
        stub[benchmark] = per_scenario
    return stub


def parse_overrides(document: object, where: str) -> tuple[ScenarioOverrides, ...]:
    """Check a `{benchmark: {scenario: {setting: value}}}` object; errors name `where` and the key."""
    overrides = []
    for benchmark, per_scenario in _object_items(document, where):
        for scenario_name, section in _object_items(per_scenario, f"{where}: {benchmark}"):
            scenario = _scenario(scenario_name, f"{where}: {benchmark}")
            section_where = f"{where}: {benchmark}.{scenario.value}"
            raw_settings = [
                RawSetting(name, value, section_where)
                for name, value in _object_items(section, section_where)
            ]
            overrides.append(
                ScenarioOverrides(benchmark, scenario, parse_settings(raw_settings, scenario))
            )
    return tuple(overrides)


def register_for_system(
    overrides: Sequence[ScenarioOverrides], system: str, source: str, registry: ConfigRegistry
) -> None:
    """Register each non-empty override for `system`; an all-null section inherits everything and so
    registers nothing (it may name a scenario that has no config of its own)."""
    for override in overrides:
        if override.settings.set_fields():
            registry.register_overrides(
                override.benchmark, override.scenario, system, override.settings, source
            )


def _object_items(value: object, where: str) -> list[tuple[str, object]]:
    """The entries of a JSON object, less the `_` notes."""
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a JSON object, got {_json_type(value)}")
    return [(key, item) for key, item in value.items() if not key.startswith("_")]


def _scenario(name: str, where: str) -> Scenario:
    for scenario in Scenario:
        if scenario.value == name:
            return scenario
    choices = ", ".join(scenario.value for scenario in Scenario)
    raise HarnessError(f"{where}: unknown scenario {name!r}: choose one of {choices}")


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "true/false"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")
