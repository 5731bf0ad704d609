"""Config classes in NVIDIA's style, registered per benchmark, scenario and system.

A config class declares settings as plain class attributes and inherits the rest: a benchmark base,
then a scenario class (registered for ANY_SYSTEM), then a system class that subclasses it:

    class ResNet50(BenchmarkConfig):
        precision = "int8"

    @register(benchmark="resnet50", scenario=Scenario.OFFLINE, system=ANY_SYSTEM)
    class ResNet50Offline(ResNet50):
        batch_size = 64

    @register(benchmark="resnet50", scenario=Scenario.OFFLINE, system="H100-SXM-80GBx1")
    class ResNet50OfflineH100(ResNet50Offline):
        batch_size = 2048

Every class is checked when it is registered, at import time, so a typo fails before any run.
Custom systems (files) register overrides that inherit the ANY_SYSTEM config when resolved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final, TypeVar

from mlperf_harness.config.fields import HarnessSettings, scenario_problem
from mlperf_harness.config.validate import RawSetting, parse_settings
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

# The system key of a config for any machine that has none of its own. Not a valid system name
# (those are file-name safe), so it cannot collide with one.
ANY_SYSTEM: Final = "*"


class BenchmarkConfig:
    """Base of every config class: settings are its public class attributes (`batch_size = 32`).

    Names that start with `_` are not settings. A subclass may set an inherited setting to None to
    unset it, so that LoadGen's or the benchmark's own default applies.
    """


_ConfigClass = TypeVar("_ConfigClass", bound=type[BenchmarkConfig])


@dataclass(frozen=True)
class ConfigKey:
    benchmark: str
    scenario: Scenario
    system: str  # a system name, or ANY_SYSTEM

    def __str__(self) -> str:
        return f"{self.benchmark}/{self.scenario.value}/{_system_label(self.system)}"


@dataclass(frozen=True)
class FieldOrigin:
    name: str  # a HarnessSettings field
    source: str  # what set it: a config class (`module.Class`), a file, or "command line"


@dataclass(frozen=True)
class ResolvedSettings:
    """The settings for one benchmark, scenario and system, and where each one came from."""

    requested_system: str
    key: ConfigKey  # the registered config used: the system's own, or the ANY_SYSTEM one
    settings: HarnessSettings
    origins: tuple[FieldOrigin, ...]  # one per set field, in table order

    def origin_of(self, name: str) -> str | None:
        return next((origin.source for origin in self.origins if origin.name == name), None)

    def with_overrides(self, overrides: HarnessSettings, source: str) -> ResolvedSettings:
        """`overrides` (e.g. the command line's flags) layered on top, their origin `source`."""
        settings = overrides.merged_over(self.settings)
        sources = {origin.name: origin.source for origin in self.origins}
        sources.update((name, source) for name in overrides.set_fields())
        origins = tuple(FieldOrigin(name, sources[name]) for name in settings.set_fields())
        return ResolvedSettings(self.requested_system, self.key, settings, origins)

    def without(self, names: Sequence[str]) -> ResolvedSettings:
        """These settings with the fields `names` unset, whatever layer set them."""
        settings = replace(self.settings, **dict.fromkeys(names))
        origins = tuple(origin for origin in self.origins if origin.name not in names)
        return ResolvedSettings(self.requested_system, self.key, settings, origins)

    def describe(self) -> str:
        """A printout for --show_config: each set value and where it came from."""
        header = (
            f"{self.key.benchmark}/{self.key.scenario.value} on {self.requested_system}:"
            f" config for {_system_label(self.key.system)}"
        )
        lines = [header]
        for origin in self.origins:
            value = getattr(self.settings, origin.name)
            lines.append(f"  {origin.name} = {value!r}  # {origin.source}")
        return "\n".join(lines)


@dataclass(frozen=True)
class _Entry:
    settings: HarnessSettings
    origins: tuple[FieldOrigin, ...]
    registered_by: str  # for the duplicate-registration error
    inherits_any_system: bool  # overrides from a file: unset fields come from the ANY_SYSTEM config


class ConfigRegistry:
    """Configs by benchmark, scenario and system. Tests make their own; the decorator uses the default."""

    def __init__(self) -> None:
        self._entries: dict[ConfigKey, _Entry] = {}

    def register(
        self, benchmark: str, scenario: Scenario, system: str = ANY_SYSTEM
    ) -> Callable[[_ConfigClass], _ConfigClass]:
        """A class decorator: check the class's settings for `scenario` and register them."""

        def register_class(cls: _ConfigClass) -> _ConfigClass:
            self._register_class(ConfigKey(benchmark, scenario, system), cls)
            return cls

        return register_class

    def register_overrides(
        self,
        benchmark: str,
        scenario: Scenario,
        system: str,
        overrides: HarnessSettings,
        source: str,
    ) -> None:
        """Settings for one system that inherit, field by field, the ANY_SYSTEM config."""
        key = ConfigKey(benchmark, scenario, system)
        if system == ANY_SYSTEM:
            raise HarnessError(f"{source}: overrides for {key} need a system name")
        self._refuse_duplicate(key, source)
        for name in overrides.set_fields():
            problem = scenario_problem(name, scenario)
            if problem is not None:
                raise HarnessError(f"{source}: {benchmark}.{scenario.value}: {problem}")
        if ConfigKey(benchmark, scenario, ANY_SYSTEM) not in self._entries:
            raise HarnessError(
                f"{source}: no config for {benchmark}/{scenario.value} to inherit from; "
                f"{self._registered_summary(benchmark)}"
            )
        origins = tuple(FieldOrigin(name, source) for name in overrides.set_fields())
        self._entries[key] = _Entry(overrides, origins, source, inherits_any_system=True)

    def copy(self) -> ConfigRegistry:
        """A registry holding the same configs, to which one run can add its custom systems without
        changing the process-wide default."""
        twin = ConfigRegistry()
        twin._entries = dict(self._entries)
        return twin

    def registered_keys(self) -> tuple[ConfigKey, ...]:
        return tuple(sorted(self._entries, key=_sort_key))

    def resolve(self, benchmark: str, scenario: Scenario, system: str) -> ResolvedSettings:
        """The system's own config if registered, else the ANY_SYSTEM one."""
        any_system_key = ConfigKey(benchmark, scenario, ANY_SYSTEM)
        key = ConfigKey(benchmark, scenario, system)
        if key not in self._entries:
            key = any_system_key
        entry = self._entries.get(key)
        if entry is None:
            raise HarnessError(
                f"no config for {benchmark}/{scenario.value} on {system} or any system; "
                f"{self._registered_summary(benchmark)}"
            )
        settings, origins = entry.settings, entry.origins
        if entry.inherits_any_system:
            base = self._entries[any_system_key]  # its presence was checked at registration
            settings = settings.merged_over(base.settings)
            sources = {origin.name: origin.source for origin in (*base.origins, *origins)}
            origins = tuple(FieldOrigin(name, sources[name]) for name in settings.set_fields())
        return ResolvedSettings(system, key, settings, origins)

    def _register_class(self, key: ConfigKey, cls: type[BenchmarkConfig]) -> None:
        name = getattr(cls, "__name__", repr(cls))  # as written after `class`, for the errors
        if not (isinstance(cls, type) and issubclass(cls, BenchmarkConfig)):
            raise HarnessError(f"{name}: a config class must subclass BenchmarkConfig")
        self._refuse_duplicate(key, name)
        defined_in = _settings_by_defining_class(cls)
        raw_settings = [
            RawSetting(setting, value, _where(cls, owner, key))
            for setting, (value, owner) in defined_in.items()
        ]
        settings = parse_settings(raw_settings, key.scenario)
        origins = tuple(
            FieldOrigin(setting, _class_label(defined_in[setting][1]))
            for setting in settings.set_fields()
        )
        self._entries[key] = _Entry(settings, origins, name, inherits_any_system=False)

    def _refuse_duplicate(self, key: ConfigKey, registering: str) -> None:
        existing = self._entries.get(key)
        if existing is not None:
            raise HarnessError(
                f"{registering}: {key} is already registered by {existing.registered_by}"
            )

    def _registered_summary(self, benchmark: str) -> str:
        keys = self.registered_keys()
        same_benchmark = [key for key in keys if key.benchmark == benchmark]
        if same_benchmark:
            listed = ", ".join(str(key) for key in same_benchmark)
            return f"registered for {benchmark}: {listed}"
        benchmarks = sorted({key.benchmark for key in keys})
        return f"registered benchmarks: {', '.join(benchmarks) or 'none'}"


def _settings_by_defining_class(
    cls: type[BenchmarkConfig],
) -> dict[str, tuple[object, type]]:
    """Each setting's value and the class that defines it, the most derived one winning (as Python's
    own attribute lookup does)."""
    found: dict[str, tuple[object, type]] = {}
    for owner in cls.__mro__:
        if owner is object or owner is BenchmarkConfig:
            continue
        for name, value in vars(owner).items():
            if not name.startswith("_") and name not in found:
                found[name] = (value, owner)
    return found


def _where(registered: type, owner: type, key: ConfigKey) -> str:
    where = f"{registered.__name__} ({key})"
    if owner is not registered:
        where += f", inherited from {owner.__name__}"
    return where


def _class_label(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _system_label(system: str) -> str:
    return "any system" if system == ANY_SYSTEM else system


def _sort_key(key: ConfigKey) -> tuple[str, int, bool, str]:
    # Scenarios in enum order, and the ANY_SYSTEM config before the systems' own.
    return (key.benchmark, list(Scenario).index(key.scenario), key.system != ANY_SYSTEM, key.system)


DEFAULT_REGISTRY = ConfigRegistry()


def register(
    benchmark: str, scenario: Scenario, system: str = ANY_SYSTEM
) -> Callable[[_ConfigClass], _ConfigClass]:
    """Register a config class in the default registry (see ConfigRegistry.register)."""
    return DEFAULT_REGISTRY.register(benchmark, scenario, system)


def resolve(benchmark: str, scenario: Scenario, system: str) -> ResolvedSettings:
    """Resolve from the default registry (see ConfigRegistry.resolve)."""
    return DEFAULT_REGISTRY.resolve(benchmark, scenario, system)
