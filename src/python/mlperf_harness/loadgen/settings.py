"""Typed LoadGen settings and their translation into `mlperf_loadgen.TestSettings`.

Precedence, lowest first: LoadGen's built-in mlperf.conf for the benchmark and scenario, then the
benchmark's own defaults, then the user's `user.conf`, then the fields set on the command line.
A field left at None keeps what the layers below it say.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg

from mlperf_harness.errors import HarnessError


class Scenario(enum.Enum):
    OFFLINE = "Offline"
    SERVER = "Server"
    SINGLE_STREAM = "SingleStream"
    MULTI_STREAM = "MultiStream"
    # LoadGen's Server run under the model's "-interactive" name in mlperf.conf (Llama2-70B's
    # tighter token latency bounds), staged in an Interactive directory: `loadgen` is Server.
    INTERACTIVE = "Interactive"

    @property
    def loadgen(self) -> Scenario:
        """The scenario LoadGen runs: Server for Interactive, else this one."""
        return Scenario.SERVER if self is Scenario.INTERACTIVE else self

    @classmethod
    def parse(cls, text: str) -> Scenario:
        wanted = text.replace("_", "").replace("-", "").lower()
        for scenario in cls:
            if scenario.value.lower() == wanted:
                return scenario
        choices = ", ".join(s.value for s in cls)
        raise HarnessError(f"unknown scenario {text!r}: choose one of {choices}")


class TestMode(enum.Enum):
    __test__ = False  # not a pytest test class, despite the name

    PERFORMANCE_ONLY = "PerformanceOnly"
    ACCURACY_ONLY = "AccuracyOnly"
    SUBMISSION_RUN = "SubmissionRun"  # accuracy over the whole set, then the performance run
    FIND_PEAK_PERFORMANCE = "FindPeakPerformance"

    @classmethod
    def parse(cls, text: str) -> TestMode:
        for mode in cls:
            if mode.value.lower() == text.lower():
                return mode
        choices = ", ".join(m.value for m in cls)
        raise HarnessError(f"unknown test mode {text!r}: choose one of {choices}")

    @property
    def checks_accuracy(self) -> bool:
        return self in (TestMode.ACCURACY_ONLY, TestMode.SUBMISSION_RUN)


def conf_model(model: str, scenario: Scenario) -> str:
    """The model's name in mlperf.conf and user.conf for a scenario: "<model>-interactive" for
    Interactive (LoadGen 6.0.17's mlperf.conf: llama2-70b-interactive.Server.ttft_latency = 450)."""
    return f"{model}-interactive" if scenario is Scenario.INTERACTIVE else model


_LOADGEN_SCENARIOS = {
    Scenario.OFFLINE: lg.TestScenario.Offline,
    Scenario.SERVER: lg.TestScenario.Server,
    Scenario.SINGLE_STREAM: lg.TestScenario.SingleStream,
    Scenario.MULTI_STREAM: lg.TestScenario.MultiStream,
    Scenario.INTERACTIVE: lg.TestScenario.Server,
}
_LOADGEN_MODES = {
    TestMode.PERFORMANCE_ONLY: lg.TestMode.PerformanceOnly,
    TestMode.ACCURACY_ONLY: lg.TestMode.AccuracyOnly,
    TestMode.SUBMISSION_RUN: lg.TestMode.SubmissionRun,
    TestMode.FIND_PEAK_PERFORMANCE: lg.TestMode.FindPeakPerformance,
}


@dataclass(frozen=True)
class LoadgenSettings:
    """What one LoadGen test needs to know; None leaves LoadGen's and user.conf's value in place."""

    model: str  # the benchmark's name in mlperf.conf / user.conf, e.g. "resnet50"
    scenario: Scenario
    mode: TestMode = TestMode.PERFORMANCE_ONLY
    user_conf: Path | None = None
    min_duration_ms: int | None = None
    max_duration_ms: int | None = None
    min_query_count: int | None = None
    max_query_count: int | None = None
    offline_expected_qps: float | None = None
    server_target_qps: float | None = None
    server_target_latency_ns: int | None = None
    single_stream_expected_latency_ns: int | None = None
    multi_stream_expected_latency_ns: int | None = None
    multi_stream_samples_per_query: int | None = None
    performance_sample_count: int | None = None
    # Record each response's first token and token count (an LLM's TEST06 run: LoadGen then logs
    # them with the response; GPT-J's mlperf.conf only infers token latencies).
    use_token_latencies: bool | None = None
    # The round's three LoadGen seeds where they are not the built-in mlperf.conf's (an earlier
    # round's: submission/rounds), set over every layer; None keeps mlperf.conf's.
    seeds: RoundSeeds | None = None

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
                raise HarnessError(f"{field.name} must be positive, got {value}")
        if self.user_conf is not None and not self.user_conf.is_file():
            raise HarnessError(f"user.conf not found: {self.user_conf}")


@dataclass(frozen=True)
class RoundSeeds:
    """LoadGen's seeds for a round whose checker compares other seeds than LoadGen's built-in
    mlperf.conf carries; `test05`: TEST05's seeds, for a TEST05 audit run (LoadGen swaps them in
    itself when TestSettings.test05 is set, and logs that it did)."""

    qsl_rng_seed: int
    sample_index_rng_seed: int
    schedule_rng_seed: int
    test05: tuple[int, int, int] | None = None

    @classmethod
    def of(cls, seeds: Mapping[str, int], test05: Mapping[str, int] | None = None) -> RoundSeeds:
        def three(values: Mapping[str, int]) -> tuple[int, int, int]:
            return (
                int(values["qsl_rng_seed"]),
                int(values["sample_index_rng_seed"]),
                int(values["schedule_rng_seed"]),
            )

        qsl, sample_index, schedule = three(seeds)
        return cls(qsl, sample_index, schedule, None if test05 is None else three(test05))

    def apply(self, test_settings: Any) -> None:
        test_settings.qsl_rng_seed = self.qsl_rng_seed
        test_settings.sample_index_rng_seed = self.sample_index_rng_seed
        test_settings.schedule_rng_seed = self.schedule_rng_seed
        if self.test05 is not None:
            test_settings.test05 = True
            (
                test_settings.test05_qsl_rng_seed,
                test_settings.test05_sample_index_rng_seed,
                test_settings.test05_schedule_rng_seed,
            ) = self.test05


# Our field name -> TestSettings attribute, for the fields that map one to one.
_DIRECT_FIELDS = {
    "min_duration_ms": "min_duration_ms",
    "max_duration_ms": "max_duration_ms",
    "min_query_count": "min_query_count",
    "max_query_count": "max_query_count",
    "offline_expected_qps": "offline_expected_qps",
    "server_target_qps": "server_target_qps",
    "server_target_latency_ns": "server_target_latency_ns",
    "single_stream_expected_latency_ns": "single_stream_expected_latency_ns",
    "multi_stream_expected_latency_ns": "multi_stream_expected_latency_ns",
    "multi_stream_samples_per_query": "multi_stream_samples_per_query",
    "performance_sample_count": "performance_sample_count_override",
    "use_token_latencies": "use_token_latencies",
}


_USER_CONF_TYPE = 2  # see to_test_settings


def _apply_fields(test_settings: Any, settings: LoadgenSettings) -> None:
    for ours, theirs in _DIRECT_FIELDS.items():
        value = getattr(settings, ours)
        if value is not None:
            setattr(test_settings, theirs, value)


def to_test_settings(
    settings: LoadgenSettings, defaults: LoadgenSettings | None = None
) -> lg.TestSettings:
    """`defaults` (the benchmark's) sit under user.conf; `settings` (the command line's) above it."""
    test_settings = lg.TestSettings()
    fill_test_settings(
        test_settings,
        settings,
        defaults,
        _LOADGEN_SCENARIOS[settings.scenario],
        _LOADGEN_MODES[settings.mode],
    )
    return test_settings


def fill_test_settings(
    test_settings: Any,
    settings: LoadgenSettings,
    defaults: LoadgenSettings | None,
    scenario_value: object,
    mode_value: object,
) -> None:
    """Fill a fresh TestSettings: mlperf_loadgen's, or the native module's copy of LoadGen's
    (loadgen/native_run.py), which has the same attributes and FromConfig and takes scenario and
    mode by name; `scenario_value` and `mode_value` are what its `scenario` and `mode` take. One
    sequence for both, so that both LoadGen paths run under the same settings."""
    scenario = settings.scenario.loadgen.value
    model = conf_model(settings.model, settings.scenario)
    # conf_type 0 reads LoadGen's built-in mlperf.conf (the path is ignored); 1 reads a user.conf.
    if test_settings.FromConfig("", model, scenario, 0) != 0:
        raise HarnessError(f"LoadGen could not apply its mlperf.conf for {model}/{scenario}")
    if defaults is not None:
        _apply_fields(test_settings, defaults)
    user_conf = settings.user_conf
    # conf_type 2 (LoadGen's audit.config reading) parses the same lines and keys as 1 (user.conf)
    # without 1's two side effects: its first call in a process re-reads mlperf.conf over `defaults`,
    # and every later call logs "Multiple conf files are used" as an error into the next test's
    # detail log, which makes every run after the first of a process (a submission) invalid.
    # check_user_conf has already refused what LoadGen would reject or silently ignore.
    if user_conf is not None and test_settings.FromConfig(
        str(user_conf), model, scenario, _USER_CONF_TYPE
    ):
        raise HarnessError(f"LoadGen could not read {settings.user_conf}")
    test_settings.scenario = scenario_value
    test_settings.mode = mode_value
    _apply_fields(test_settings, settings)
    if settings.seeds is not None:
        settings.seeds.apply(test_settings)


# Fields that only one scenario reads, by their prefix; the others apply to every scenario.
_SCENARIO_PREFIXES = {
    "offline_": Scenario.OFFLINE,
    "server_": Scenario.SERVER,
    "single_stream_": Scenario.SINGLE_STREAM,
    "multi_stream_": Scenario.MULTI_STREAM,
}


def mlperf_conf_values(model: str, scenario: Scenario) -> dict[str, int | float]:
    """What LoadGen's built-in mlperf.conf sets for `model` in `scenario`, by our field names (the
    bottom layer of a run's LoadGen settings, for --show_config)."""
    test_settings = lg.TestSettings()
    name, run_as = conf_model(model, scenario), scenario.loadgen
    if test_settings.FromConfig("", name, run_as.value, 0) != 0:
        raise HarnessError(f"LoadGen could not apply its mlperf.conf for {name}/{run_as.value}")
    values: dict[str, int | float] = {}
    for ours, theirs in _DIRECT_FIELDS.items():
        only = next(
            (s for prefix, s in _SCENARIO_PREFIXES.items() if ours.startswith(prefix)), None
        )
        if only is None or only is run_as:
            values[ours] = getattr(test_settings, theirs)
    return values


def mlperf_conf_lines(model: str, scenario: Scenario) -> list[str]:
    """LoadGen's built-in mlperf.conf values for `model` in `scenario` (those this harness names),
    as config lines: what a round whose checker wants an mlperf.conf beside each result (v4.0)
    gets, the file itself being built into LoadGen since 5.0."""
    values = {
        name: value
        for name, value in mlperf_conf_values(model, scenario).items()
        if not isinstance(value, bool) and value > 0
    }
    return _conf_lines(LoadgenSettings(model=model, scenario=scenario, **values))  # type: ignore[arg-type]


# Our field name -> its user.conf key; values in the file's units (durations and latencies in ms).
_CONF_KEYS = {
    "min_duration_ms": ("min_duration", 1),
    "max_duration_ms": ("max_duration", 1),
    "min_query_count": ("min_query_count", 1),
    "max_query_count": ("max_query_count", 1),
    "offline_expected_qps": ("target_qps", 1),
    "server_target_qps": ("target_qps", 1),
    "server_target_latency_ns": ("target_latency", 1e-6),
    "single_stream_expected_latency_ns": ("target_latency", 1e-6),
    "multi_stream_expected_latency_ns": ("target_latency", 1e-6),
    "multi_stream_samples_per_query": ("samples_per_query", 1),
    "performance_sample_count": ("performance_sample_count_override", 1),
    "use_token_latencies": ("use_token_latencies", 1),
}


def _conf_lines(settings: LoadgenSettings) -> list[str]:
    prefix = f"{conf_model(settings.model, settings.scenario)}.{settings.scenario.loadgen.value}"
    lines = []
    for name, (key, scale) in _CONF_KEYS.items():
        value = getattr(settings, name)
        if value is not None:
            scaled = value * scale
            text = str(int(scaled)) if float(scaled).is_integer() else repr(float(scaled))
            lines.append(f"{prefix}.{key} = {text}")
    return lines


def effective_user_conf(settings: LoadgenSettings, defaults: LoadgenSettings | None = None) -> str:
    """The settings a run applied over LoadGen's built-in mlperf.conf, as one user.conf (later lines
    win, as in LoadGen's own parsing): what a submission's user.conf must show."""
    parts = [
        "# The LoadGen settings this run applied over mlperf.conf, lowest layer first; a later line",
        "# overrides an earlier one with the same key.",
    ]
    if defaults is not None:
        parts += ["# the benchmark's and system's config", *_conf_lines(defaults)]
    if settings.user_conf is not None:
        parts += [f"# {settings.user_conf}", settings.user_conf.read_text(errors="replace").strip()]
    parts += ["# the command line", *_conf_lines(settings)]
    if settings.seeds is not None:
        # LoadGen reads seeds only from its built-in mlperf.conf: a user.conf cannot set them.
        seeds = settings.seeds
        parts += [
            "# the round's seeds, set in TestSettings over mlperf.conf's (not user.conf keys):",
            f"#   qsl_rng_seed = {seeds.qsl_rng_seed}",
            f"#   sample_index_rng_seed = {seeds.sample_index_rng_seed}",
            f"#   schedule_rng_seed = {seeds.schedule_rng_seed}",
        ]
        if seeds.test05 is not None:
            parts.append(f"#   test05 = 1, test05 seeds = {', '.join(map(str, seeds.test05))}")
    return "\n".join(parts) + "\n"
