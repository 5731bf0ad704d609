"""Custom systems: machines the harness does not know, each a JSON file in a config directory.

`add_custom_system` records how to recognise this machine and writes a stub of every setting (null:
inherit the default config for any system). After the user fills in values, `load_custom_systems` and
`register_custom_systems` make them system-specific overrides, checked as config classes are.

A file `<config_dir>/<name>.json`; its name is the system's name:

    {"match": {"gpu_count": 0, "gpu_name": "", "cpu_model": "...", "cpu_cores": 2},
     "settings": {"resnet50": {"Offline": {"batch_size": 16, ..., "_help": {...}}}},
     "system_description": {"cooling": "air", "host_memory_configuration": "8x 32 GB DDR5"}}

"system_description" (optional) holds fields of a submission's systems/<name>.json that detection
cannot know, by MLCommons' field names (submission.system_description checks the names).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.config.overrides import (
    ScenarioOverrides,
    overrides_stub,
    parse_overrides,
    register_for_system,
)
from mlperf_harness.config.registry import DEFAULT_REGISTRY, ConfigRegistry
from mlperf_harness.errors import HarnessError
from mlperf_harness.systems.detect import SystemInfo
from mlperf_harness.systems.known import KNOWN_SYSTEMS, SystemMatch, match_known_system

# Relative to the working directory, which `pants run` sets to the repository root.
DEFAULT_CONFIG_DIR = Path("configs/systems")
_SAFE_NAME = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*"
)  # the name is a file name and a log path part
_MATCH_FIELDS: dict[str, type] = {
    "gpu_count": int,
    "gpu_name": str,
    "cpu_model": str,
    "cpu_cores": int,
}
_FILE_KEYS = ("match", "settings", "system_description")


@dataclass(frozen=True)
class CustomSystem:
    name: str
    path: Path  # the JSON file it was read from
    match: SystemMatch
    overrides: tuple[ScenarioOverrides, ...]
    system_description: tuple[tuple[str, str], ...] = ()  # (field, text), as the file lists them


def add_custom_system(
    info: SystemInfo,
    name: str | None,
    config_dir: Path,
    benchmarks: Sequence[str],
    *,
    allow_known: bool = False,
) -> Path:
    """Register the machine `info` describes as a custom system; returns the stub file to fill in.

    A known system already has its configs, so registering one takes `allow_known`: the custom
    system then wins (`system_name`) and inherits the configs for any system, not the known one's.
    """
    name = name or info.default_name
    problem = _name_problem(name)
    if problem is not None:
        raise HarnessError(problem)
    if not benchmarks:
        raise HarnessError("name at least one benchmark to write a config stub for")
    known = match_known_system(info)
    if known is not None and not allow_known:
        raise HarnessError(
            f"this machine is the known system {known}, whose configs apply already; to register"
            " it as a custom system anyway (inheriting the configs for any system), allow known"
            " systems (--allow_known)"
        )
    if any(system.name == name for system in KNOWN_SYSTEMS):
        raise HarnessError(f"{name} is the name of a known system; choose another with --name")
    path = config_dir / f"{name}.json"
    if path.exists():
        raise HarnessError(f"{path} already exists: edit it, or remove it to start over")
    already = match_custom_system(info, load_custom_systems(config_dir))
    if already is not None:
        raise HarnessError(
            f"this machine is already the custom system {already.name} ({already.path})"
        )
    write_json_atomic(path, _new_file(info, list(dict.fromkeys(benchmarks))))
    return path


def load_custom_systems(config_dir: Path) -> list[CustomSystem]:
    """Every `*.json` in `config_dir`, checked; none when the directory does not exist."""
    if not config_dir.is_dir():
        return []
    return [_load(path) for path in sorted(config_dir.glob("*.json"))]


def register_custom_systems(
    systems: Sequence[CustomSystem], registry: ConfigRegistry = DEFAULT_REGISTRY
) -> None:
    """Make each system's values overrides of the ANY_SYSTEM configs. Run it after the benchmarks'
    config classes are registered: an override needs a config to inherit from."""
    for system in systems:
        register_for_system(system.overrides, system.name, str(system.path), registry)


def match_custom_system(info: SystemInfo, systems: Sequence[CustomSystem]) -> CustomSystem | None:
    matching = [system for system in systems if system.match.matches(info)]
    if len(matching) > 1:
        paths = ", ".join(str(system.path) for system in matching)
        raise HarnessError(
            f"this machine matches several custom systems ({paths}): remove all but one"
        )
    return matching[0] if matching else None


def system_name(info: SystemInfo, custom_dir: Path) -> str:
    """The machine's name: a custom system's, else a known system's, else its detected default.

    A custom system wins because the user registered it on purpose (a known machine needs
    `allow_known` for that). This lives here, not in `known`, because it needs both modules and
    custom systems already build on known ones.
    """
    custom = match_custom_system(info, load_custom_systems(custom_dir))
    if custom is not None:
        return custom.name
    return match_known_system(info) or info.default_name


def _name_problem(name: str) -> str | None:
    if _SAFE_NAME.fullmatch(name):
        return None
    return f"system name {name!r} must be letters, digits, '.', '_' or '-' (a file name)"


def _match_for(info: SystemInfo) -> SystemMatch:
    """A match for exactly this machine: its GPU model and count, CPU model and core count."""
    gpu_names = sorted({gpu.name for gpu in info.gpus})
    if len(gpu_names) > 1:
        raise HarnessError(f"GPUs of different models ({', '.join(gpu_names)}) are not supported")
    gpu_name = gpu_names[0] if gpu_names else ""
    return SystemMatch(len(info.gpus), gpu_name, info.cpu_model, info.cpu_cores)


def _new_file(info: SystemInfo, benchmarks: Sequence[str]) -> dict[str, Any]:
    return {
        "_comment": (
            "A custom system. Fill in settings under 'settings'; null inherits the default config "
            "for any system. Each '_help' says what the settings beside it mean."
        ),
        "_detected": asdict(info),
        "match": asdict(_match_for(info)),
        "settings": overrides_stub(benchmarks),
    }


def _load(path: Path) -> CustomSystem:
    where = str(path)
    name_problem = _name_problem(path.stem)
    if name_problem is not None:
        raise HarnessError(f"{where}: {name_problem}")
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise HarnessError(
            f"{where}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessError(f"{where}: cannot read: {error}") from None
    if not isinstance(document, dict):
        raise HarnessError(f"{where}: expected a JSON object with keys {', '.join(_FILE_KEYS)}")
    for key in document:
        if not key.startswith("_") and key not in _FILE_KEYS:
            raise HarnessError(f"{where}: unknown key {key!r}: expected {', '.join(_FILE_KEYS)}")
    if "match" not in document:
        raise HarnessError(f"{where}: no 'match': add_custom_system writes it")
    match = _parse_match(document["match"], f"{where}: match")
    overrides = parse_overrides(document.get("settings", {}), f"{where}: settings")
    description = parse_description_fields(
        document.get("system_description", {}), f"{where}: system_description"
    )
    return CustomSystem(path.stem, path, match, overrides, description)


def parse_description_fields(value: object, where: str) -> tuple[tuple[str, str], ...]:
    """A JSON object of system description field -> text. Numbers become text (MLCommons' checker
    counts an integer 0 as empty); null and "_"-keys (help) are skipped."""
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a JSON object of field -> text")
    fields = []
    for key, item in value.items():
        if key.startswith("_") or item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise HarnessError(f"{where}: {key} must be text, got {item!r}")
        fields.append((key, item if isinstance(item, str) else str(item)))
    return tuple(fields)


def _parse_match(value: object, where: str) -> SystemMatch:
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a JSON object")
    for key, item in value.items():
        expected = _MATCH_FIELDS.get(key)
        if expected is None:
            raise HarnessError(f"{where}: unknown key {key!r}: expected {', '.join(_MATCH_FIELDS)}")
        if isinstance(item, bool) or not isinstance(item, expected):
            raise HarnessError(f"{where}: {key} must be {expected.__name__}, got {item!r}")
    if "gpu_count" not in value:
        raise HarnessError(f"{where}: gpu_count is required")
    try:
        return SystemMatch(**value)
    except HarnessError as error:  # its own message lacks the file name
        raise HarnessError(f"{where}: {error}") from None
