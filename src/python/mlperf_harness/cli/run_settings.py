"""A run's settings, layered in one place: what a run uses, what --show_config prints, what a
Triton server serves and what a submission's progress line expects all come from `layer_settings`.

The layers, lowest first: LoadGen's built-in mlperf.conf; the config registered for this benchmark,
scenario and system (a custom system's file inheriting the one for any system); the run's way of
running (the sim backend's simulated system, the Triton harness); a stand-in's short run; user.conf;
the command line. A rate that none of them sets is measured at the run's start
(config/measured_rates.py): `LayeredSettings.to_measure` names it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from mlperf_harness.backends.registry import NO_WORK, check_backend_name, settings_layer
from mlperf_harness.benchmarks.spec import Benchmark, PreparedRun
from mlperf_harness.cli.log_dirs import DEFAULT_LOG_ROOT, check_log_dir
from mlperf_harness.cli.options import FAST_MIN_DURATION_MS, RunOptions
from mlperf_harness.config.fields import HarnessSettings, for_another_backend, owner_problem
from mlperf_harness.config.measured_rates import (
    BOUND_FIELD,
    ENGINE_FIELDS,
    MEASURED,
    rates_of_another_engine,
    rates_to_measure,
)
from mlperf_harness.config.registry import DEFAULT_REGISTRY, ResolvedSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.paths import NATIVE, PYTHON
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode, mlperf_conf_values
from mlperf_harness.loadgen.user_conf import ConfLine, applicable, read_user_conf
from mlperf_harness.submission.round_run import run_audits, with_round_seeds
from mlperf_harness.systems.custom import load_custom_systems, register_custom_systems, system_name
from mlperf_harness.systems.detect import detect_system

COMMAND_LINE = "command line"  # the source label of settings given as flags
TRITON_LAYER = "the Triton harness (mlperf_loadgen only)"  # the source label of its override
STAND_IN_SOURCE = "stand-in short run"


@dataclass(frozen=True)
class LayeredSettings:
    system: str
    backend: str
    resolved: ResolvedSettings  # every layer above user.conf's and mlperf.conf's, flags included
    loadgen_defaults: LoadgenSettings  # the LoadGen values below user.conf
    loadgen_flags: LoadgenSettings  # the command line's, above user.conf
    stand_in: bool
    to_measure: tuple[str, ...]  # fields no layer sets, measured at the run's start
    user_conf: tuple[ConfLine, ...]  # the user.conf lines LoadGen applies to this run
    # The config's line on rates it gave that the flags' other engine does not use (measured at
    # start instead: rates_of_another_engine); None where there are none. A run prints it.
    other_engine: str | None = None

    @property
    def settings(self) -> HarnessSettings:
        return self.resolved.settings


def layer_settings(
    benchmark: Benchmark,
    options: RunOptions,
    stand_in: Callable[[HarnessSettings], bool],
    *,
    log_dir: bool = True,
) -> LayeredSettings:
    """Every layer of one run's settings. `stand_in`: whether the run is a stand-in's, told the
    settings below that layer (a run prepares the benchmark there and answers from what it
    built; --show_config answers from what is on disk, Benchmark.expects_stand_in). `log_dir`:
    whether the run's log directory matters (not to --show_config)."""
    system, resolved = resolve_settings(benchmark, options)
    resolved = with_variant_layer(benchmark, options, system, resolved)
    backend, user_conf = check_before_preparing(
        benchmark, options, resolved.settings.backend or "null", log_dir=log_dir
    )
    resolved = without_other_backends_fields(
        benchmark, backend, with_run_layers(benchmark, options, backend, resolved)
    )
    check_owned_settings(
        benchmark, backend, resolved.with_overrides(options.overrides, COMMAND_LINE)
    )
    is_stand_in = stand_in(resolved.with_overrides(options.overrides, COMMAND_LINE).settings)
    if is_stand_in:
        resolved = resolved.with_overrides(
            benchmark.stand_in_run(options.scenario), STAND_IN_SOURCE
        )
    flags = command_line_layer(options, resolved.settings)
    foreign = rates_of_another_engine(resolved, flags)
    other_engine = None
    if foreign:
        engine = ", ".join(
            f"{name} {getattr(resolved.settings, name)}"
            for name in ENGINE_FIELDS
            if getattr(resolved.settings, name) is not None
        )
        other_engine = (
            f"{benchmark.name}: {', '.join(foreign)} of the config ({engine}) not used: the"
            " flags ask for another engine, so the run times its own at start (docs/rates.md)"
        )
        resolved = resolved.without(foreign)
    loadgen_defaults = resolved.settings.to_loadgen_settings(benchmark.name, options.scenario)
    loadgen_flags = flags.to_loadgen_settings(
        benchmark.name, options.scenario, options.test_mode, options.user_conf
    )
    # The run's round's LoadGen seeds (the LoadGen we pin carries v6.1's): submission/round_run.py.
    loadgen_flags = with_round_seeds(loadgen_flags, options.round, options.audit_test)
    resolved = resolved.with_overrides(flags, COMMAND_LINE)
    to_measure: tuple[str, ...] = ()
    if backend not in NO_WORK:
        to_measure = rates_to_measure(
            resolved.settings,
            options.scenario,
            options.test_mode,
            user_conf,
            stand_in=is_stand_in,
            latency_bound=_bounds_latency(benchmark.name, options.scenario),
        )
    return LayeredSettings(
        system,
        backend,
        resolved,
        loadgen_defaults,
        loadgen_flags,
        is_stand_in,
        to_measure,
        user_conf,
        other_engine,
    )


def _bounds_latency(model: str, scenario: Scenario) -> bool:
    """Whether LoadGen's mlperf.conf bounds a Server-like run's sample latency (token-latency
    benchmarks set target_latency 0 and bound first-token and per-token latencies instead)."""
    if scenario.loadgen is not Scenario.SERVER:
        return True
    return bool(mlperf_conf_values(model, scenario).get("server_target_latency_ns", 1))


def prepare_run(
    benchmark: Benchmark,
    options: RunOptions,
    *,
    prepare_backend: str | None = None,
    log_dir: bool = True,
) -> tuple[LayeredSettings, PreparedRun]:
    """The run's settings and its prepared benchmark (built where missing), prepared for the
    settings below the stand-in's layer. `prepare_backend`: the backend that `prepare` is told of,
    where it is not the run's (the Triton harness's client prepares the samples for "null": its
    servers hold the engines)."""
    prepared: list[PreparedRun] = []

    def prepare(settings: HarnessSettings) -> bool:
        if prepare_backend is not None:
            settings = replace(settings, backend=prepare_backend)
        prepared.append(benchmark.prepare(options, settings))
        return prepared[0].stand_in

    layered = layer_settings(benchmark, options, prepare, log_dir=log_dir)
    if layered.other_engine is not None:
        print(layered.other_engine, file=sys.stderr)
    return layered, prepared[0]


def resolve_settings(benchmark: Benchmark, options: RunOptions) -> tuple[str, ResolvedSettings]:
    """This machine's name and the benchmark's config for it: classes, then custom-system files."""
    registry = DEFAULT_REGISTRY.copy()  # custom systems are this run's, not the process's
    register_custom_systems(load_custom_systems(options.config_dir), registry)
    system = options.system_name or system_name(detect_system(), options.config_dir)
    return system, registry.resolve(benchmark.name, options.scenario, system)


def check_before_preparing(
    benchmark: Benchmark, options: RunOptions, backend_setting: str, *, log_dir: bool = True
) -> tuple[str, tuple[ConfLine, ...]]:
    """Everything about the arguments that can be wrong, checked before preparation that can take
    minutes (a stand-in or engine build); returns the backend's name and the user.conf lines
    that apply to the run (user_conf.applicable)."""
    backend = check_backend_name(options.overrides.backend or backend_setting)
    benchmark.submission_model_for(options.config_ver)  # a --config_ver it lacks
    benchmark.response_dtype_for(options)  # an --output_dtype that does not apply
    check_audit_test(benchmark, options)
    user_conf: tuple[ConfLine, ...] = ()
    if options.user_conf is not None:  # a bad line is refused here, named with its number
        lines = read_user_conf(options.user_conf, benchmark.name)
        user_conf = tuple(applicable(lines, benchmark.name, options.scenario))
    # The flags that the scenario would ignore (refused), without --fast's adjustment.
    options.overrides.to_loadgen_settings(benchmark.name, options.scenario, options.test_mode)
    if log_dir:
        check_log_dir(options.log_dir or DEFAULT_LOG_ROOT)
    return backend, user_conf


def without_other_backends_fields(
    benchmark: Benchmark, backend: str, resolved: ResolvedSettings
) -> ResolvedSettings:
    """The configs' settings of this benchmark that another backend reads, left out where the
    flags choose this one (a GPU system's torch settings, `--nms` or `--prefill`, under `--backend
    onnxruntime`): they describe an engine this run does not build. The command line's are layered
    after this, and refused (check_owned_settings)."""
    foreign = [
        name
        for name in resolved.settings.set_fields()
        if for_another_backend(name, benchmark.name, backend)
    ]
    return resolved.without(foreign) if foreign else resolved


def check_owned_settings(benchmark: Benchmark, backend: str, resolved: ResolvedSettings) -> None:
    """Refuses, before any preparation, a setting that this benchmark and backend do not read
    (`--embedding` on ResNet-50, or on DLRM-v2's onnxruntime backend): it would change nothing."""
    for name in resolved.settings.set_fields():
        problem = owner_problem(name, benchmark.name, backend)
        if problem is not None:
            raise HarnessError(f"{problem} (set by {resolved.origin_of(name)})")


def check_audit_test(benchmark: Benchmark, options: RunOptions) -> None:
    audits = run_audits(benchmark, options)  # the run's round's; its model refused if unlisted
    test = options.audit_test
    if test is None:
        return
    if test not in audits:
        needed = ", ".join(t.value for t in audits) or "none"
        raise HarnessError(f"{benchmark.name} has no {test.value} audit (it needs: {needed})")
    if options.test_mode is not TestMode.PERFORMANCE_ONLY:
        raise HarnessError(
            f"--audit_test {test.value} is a performance run: leave --test_mode at PerformanceOnly"
        )


def with_variant_layer(
    benchmark: Benchmark, options: RunOptions, system: str, resolved: ResolvedSettings
) -> ResolvedSettings:
    """`resolved` with what the run's --config_ver lays over the config (Benchmark.variant_settings).
    The config's rates go with the engine the layer changes (they were measured with the config's)
    unless the layer brings its own: without one the run times them at start."""
    layer = benchmark.variant_settings(options.config_ver, system, options.scenario)
    if layer is None:
        return resolved
    foreign = rates_of_another_engine(resolved, layer)
    return resolved.without(foreign).with_overrides(layer, f"--config_ver {options.config_ver}")


def with_run_layers(
    benchmark: Benchmark, options: RunOptions, backend: str, resolved: ResolvedSettings
) -> ResolvedSettings:
    """`resolved` with the layers over the config that the run's way of running adds: the
    backend's own, where it has one (the sim backend's simulated system,
    backends/registry.settings_layer), then the Triton harness's: its SUT completes through
    mlperf_loadgen, so a system config's native LoadGen path, chosen for the direct harness, gives
    way to python (the flag itself is refused with --harness triton, options.py)."""
    so_far = resolved.with_overrides(options.overrides, COMMAND_LINE).settings
    layer = settings_layer(backend, benchmark.name, options.scenario, so_far)
    if layer is not None:
        resolved = resolved.with_overrides(*layer)
    if options.harness == "triton" and resolved.settings.loadgen_path == NATIVE:
        resolved = resolved.with_overrides(HarnessSettings(loadgen_path=PYTHON), TRITON_LAYER)
    return resolved


def command_line_layer(options: RunOptions, below: HarnessSettings) -> HarnessSettings:
    """The flags, with --fast turned into the minimum duration it implies."""
    flags = options.overrides
    if options.fast and flags.min_duration_ms is None:
        current = below.min_duration_ms or FAST_MIN_DURATION_MS
        flags = replace(flags, min_duration_ms=min(current, FAST_MIN_DURATION_MS))
    return flags


def show_config(benchmark: Benchmark, options: RunOptions) -> str:
    """The settings a run would use and where each comes from, without preparing anything; under
    them LoadGen's mlperf.conf values and the user.conf lines that apply, in the order a run
    layers them."""
    layered = layer_settings(
        benchmark, options, lambda _settings: benchmark.expects_stand_in(options), log_dir=False
    )
    lines = [layered.resolved.describe()]
    if layered.other_engine is not None:
        lines.append(f"  # {layered.other_engine}")
    for name in layered.to_measure:
        if name == BOUND_FIELD:
            lines.append(
                f"  {name}: mlperf.conf's, unless this machine's timed batches cannot meet it"
                f" (then widened at start: a stand-in)  # {MEASURED}"
            )
        else:
            lines.append(
                f"  {name} = (timed at start: no config for this system and engine sets it)"
                f"  # {MEASURED}"
            )
    if layered.backend in NO_WORK:
        lines.append(f"  (the {layered.backend} backend does no work: no rate is measured)")
    lines.append("LoadGen's mlperf.conf (built in), under the settings above and user.conf:")
    for name, value in mlperf_conf_values(benchmark.name, options.scenario).items():
        lines.append(f"  {name} = {value!r}")
    if options.user_conf is not None:
        conf = layered.user_conf
        lines.append(
            f"user.conf {options.user_conf}, over the config and under the command line:"
            + ("" if conf else " nothing for this model and scenario")
        )
        lines += [f"  {line.text}  # line {line.number}" for line in conf]
    return "\n".join(lines)
