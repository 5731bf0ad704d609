"""The run_harness action: one benchmark, one scenario, one test mode under LoadGen -> result.json."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from mlperf_harness.atomic import write_json_atomic, write_text_atomic
from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import (
    BackendOptions,
    check_backend_name,
    create_runners,
    settings_layer,
)
from mlperf_harness.benchmarks.spec import STAND_IN_NOTICE, AccuracyReport, Benchmark, PreparedRun
from mlperf_harness.cli.log_dirs import (
    DEFAULT_LOG_ROOT,
    check_log_dir,
    clear_run_outputs,
    create_default_log_dir,
    default_tail,
    remove_if_empty,
)
from mlperf_harness.cli.options import FAST_MIN_DURATION_MS, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.config.registry import DEFAULT_REGISTRY, ResolvedSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import BatchSource, DynamicBatcher, FixedBatches
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.harness.round_trip_choice import choose_round_trips
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.harness.timeline import write_timeline
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.interruption import exit_on_signal
from mlperf_harness.loadgen.paths import DEFAULT_LOADGEN_PATH, NATIVE, PYTHON
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.run import prepare_log_dir
from mlperf_harness.loadgen.settings import (
    LoadgenSettings,
    Scenario,
    TestMode,
    effective_user_conf,
    mlperf_conf_values,
)
from mlperf_harness.loadgen.user_conf import applicable, read_user_conf
from mlperf_harness.run_files import RESULT_FILE, USER_CONF_FILE
from mlperf_harness.submission.audits import AUDIT_CONFIG_FILE, audit_config_text
from mlperf_harness.submission.round_run import run_audits, with_round_seeds
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.systems.custom import load_custom_systems, register_custom_systems, system_name
from mlperf_harness.systems.detect import detect_system

DEFAULT_SERVER_TIMEOUT_US = 2_000  # when a config sets no Server batching timeout

COMMAND_LINE = "command line"  # the source label of settings given as flags
TRITON_LAYER = "the Triton harness (mlperf_loadgen only)"  # the source label of its override


@dataclass(frozen=True)
class RunRecord:
    benchmark: str
    system_name: str
    backend: str
    log_dir: Path
    result: LoadgenResult
    prepared: PreparedRun
    accuracy: AccuracyReport | None
    settings: ResolvedSettings
    audit_test: AuditTest | None = None
    command: tuple[str, ...] = ()
    variant: RunVariant | None = None
    # The Triton harness's record (servers, losses, re-sent samples); None for the direct harness.
    triton: dict[str, Any] | None = None
    # SingleStream, MultiStream: what answered each query on LoadGen's thread ("C++ round trips":
    # harness/round_trip_choice.py; or "Python"); None for the other scenarios.
    inline_answers: str | None = None

    def to_json(self) -> dict[str, Any]:
        result = self.result
        record: dict[str, Any] = {
            "benchmark": self.benchmark,
            "scenario": result.scenario,
            "test_mode": result.mode,
            "audit_test": None if self.audit_test is None else self.audit_test.value,
            "system_name": self.system_name,
            "backend": self.backend,
            **(self.variant.to_json() if self.variant is not None else {}),
            "stand_in": self.prepared.stand_in,
            "model_sha256": self.prepared.model_sha256,
            "result_valid": result.valid,
            "invalid_reasons": result.invalid_reasons,
        }
        if self.prepared.stand_in:
            record["notice"] = STAND_IN_NOTICE
        if result.completed_samples_per_second is not None:
            record["completed_samples_per_second"] = result.completed_samples_per_second
            record["scheduled_samples_per_second"] = result.scheduled_samples_per_second
        elif result.samples_per_second is not None:
            record["samples_per_second"] = result.samples_per_second
        record["latency_ns"] = result.latency_ns
        if self.accuracy is not None:
            record["accuracy"] = {"line": self.accuracy.line, **self.accuracy.record}
        record["provenance"] = self.prepared.provenance
        record["settings"] = {
            origin.name: {
                "value": getattr(self.settings.settings, origin.name),
                "from": origin.source,
            }
            for origin in self.settings.origins
        }
        record["command"] = list(self.command)
        if self.inline_answers is not None:
            record["inline_answers"] = self.inline_answers
        if self.triton is not None:
            record["harness"] = "triton"
            record["triton"] = self.triton
        record["loadgen"] = result.to_json()
        return record


@dataclass(frozen=True)
class RunVariant:
    """Which variant of the benchmark a run is, from its flags: recorded in result.json, where
    staging reads the submission model."""

    config_ver: str  # --config_ver
    submission_model: str | None  # its results/ name (bert-99.9 for BERT's high_accuracy)
    output_dtype: str  # the type of each logged response value (TEST01 compares them as such)
    round: str  # --round: the MLPerf round the run was made for (staging refuses others)

    def to_json(self) -> dict[str, Any]:
        return {
            "config_ver": self.config_ver,
            "submission_model": self.submission_model,
            "output_dtype": self.output_dtype,
            "round": self.round,
        }


def run_variant(benchmark: Benchmark, options: RunOptions) -> RunVariant:
    """The run's variant; a --config_ver or --output_dtype the benchmark lacks refused in one line."""
    return RunVariant(
        options.config_ver,
        benchmark.submission_model_for(options.config_ver),
        benchmark.response_dtype_for(options),
        options.round,
    )


def resolve_settings(benchmark: Benchmark, options: RunOptions) -> tuple[str, ResolvedSettings]:
    """This machine's name and the benchmark's config for it: classes, then custom-system files."""
    registry = DEFAULT_REGISTRY.copy()  # custom systems are this run's, not the process's
    register_custom_systems(load_custom_systems(options.config_dir), registry)
    system = options.system_name or system_name(detect_system(), options.config_dir)
    return system, registry.resolve(benchmark.name, options.scenario, system)


def command_line_layer(options: RunOptions, below: HarnessSettings) -> HarnessSettings:
    """The flags, with --fast turned into the minimum duration it implies."""
    flags = options.overrides
    if options.fast and flags.min_duration_ms is None:
        current = below.min_duration_ms or FAST_MIN_DURATION_MS
        flags = replace(flags, min_duration_ms=min(current, FAST_MIN_DURATION_MS))
    return flags


def default_log_dir(
    system_name: str,
    benchmark: str,
    scenario: Scenario,
    mode: TestMode,
    audit_test: AuditTest | None = None,
) -> Path:
    """A new directory build/logs/<time>[-n]/<system>/<benchmark>/<scenario>/<mode or audit>,
    created here: no other run, even one started in the same second, gets it."""
    last = audit_test.value if audit_test is not None else mode.value
    return create_default_log_dir(default_tail(system_name, benchmark, scenario.value, last))


def make_batch_source(scenario: Scenario, settings: HarnessSettings) -> BatchSource:
    batch_size = settings.batch_size or 1
    if scenario is Scenario.SERVER:
        timeout_us = settings.server_batch_timeout_us
        return DynamicBatcher(
            batch_size, (DEFAULT_SERVER_TIMEOUT_US if timeout_us is None else timeout_us) / 1e6
        )
    return FixedBatches(batch_size)


@dataclass(frozen=True)
class RunPlan:
    """Everything decided before LoadGen starts."""

    system: str
    backend: str
    log_dir: Path
    prepared: PreparedRun
    settings: ResolvedSettings  # every layer, the flags included
    loadgen_defaults: LoadgenSettings  # the config's LoadGen values: below user.conf
    loadgen_flags: LoadgenSettings  # the command line's: above user.conf
    audit_test: AuditTest | None = None
    command: tuple[str, ...] = ()
    variant: RunVariant | None = None
    # Set where this plan created log_dir: a run that fails before LoadGen writes there removes it,
    # and its parents below this directory while they are empty (a default's timestamped folder).
    created_log_dir_below: Path | None = None


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


def check_before_preparing(
    benchmark: Benchmark, options: RunOptions, backend_setting: str, *, log_dir: bool = True
) -> str:
    """Everything about the arguments that can be wrong, checked before preparation that can take
    minutes (a stand-in or engine build); returns the backend's name. `log_dir`: whether the run's
    log directory matters (not to --show_config)."""
    backend = check_backend_name(options.overrides.backend or backend_setting)
    run_variant(benchmark, options)
    check_audit_test(benchmark, options)
    if options.user_conf is not None:
        read_user_conf(options.user_conf, benchmark.name)  # a bad line, named with its number
    # The flags that the scenario would ignore (refused), without --fast's adjustment.
    options.overrides.to_loadgen_settings(benchmark.name, options.scenario, options.test_mode)
    if log_dir:
        check_log_dir(options.log_dir or DEFAULT_LOG_ROOT)
    return backend


def with_run_layers(
    benchmark: Benchmark, options: RunOptions, backend: str, resolved: ResolvedSettings
) -> ResolvedSettings:
    """`resolved` with the layers over the config that the run's way of running adds: the
    backend's own, where it has one (the sim backend's simulated system,
    backends/registry.settings_layer), then the Triton harness's: its SUT completes through
    mlperf_loadgen, so a system config's native LoadGen path, chosen for the direct harness, gives
    way to python (the flag itself is refused with --harness triton, options.py)."""
    so_far = resolved.with_overrides(options.overrides, "flags").settings
    layer = settings_layer(backend, benchmark.name, options.scenario, so_far)
    if layer is not None:
        resolved = resolved.with_overrides(*layer)
    if options.harness == "triton" and resolved.settings.loadgen_path == NATIVE:
        resolved = resolved.with_overrides(HarnessSettings(loadgen_path=PYTHON), TRITON_LAYER)
    return resolved


def plan_run(
    benchmark: Benchmark, options: RunOptions, prepare_backend: str | None = None
) -> RunPlan:
    """`prepare_backend`: the backend that `prepare` is told of, where it is not the run's (the
    Triton harness's client prepares the samples for "null": its servers hold the engines)."""
    system, resolved = resolve_settings(benchmark, options)
    backend = check_before_preparing(benchmark, options, resolved.settings.backend or "null")
    resolved = with_run_layers(benchmark, options, backend, resolved)
    settings = resolved.with_overrides(options.overrides, "flags").settings
    if prepare_backend is not None:
        settings = replace(settings, backend=prepare_backend)
    prepared = benchmark.prepare(options, settings)
    if prepared.run_defaults is not None:
        resolved = resolved.with_overrides(prepared.run_defaults, prepared.run_defaults_source)
    flags = command_line_layer(options, resolved.settings)
    loadgen_defaults = resolved.settings.to_loadgen_settings(benchmark.name, options.scenario)
    loadgen_flags = flags.to_loadgen_settings(
        benchmark.name, options.scenario, options.test_mode, options.user_conf
    )
    loadgen_flags = with_round_seeds(loadgen_flags, options.round, options.audit_test)
    # Created last, once nothing else can fail: a failed preparation leaves no empty folder.
    if options.log_dir is None:
        log_dir = default_log_dir(
            system, benchmark.name, options.scenario, options.test_mode, options.audit_test
        )
        created_below: Path | None = DEFAULT_LOG_ROOT
    else:
        existed = options.log_dir.exists()
        log_dir = prepare_log_dir(options.log_dir)
        created_below = None if existed else log_dir.parent
    return RunPlan(
        system=system,
        backend=backend,
        log_dir=log_dir,
        prepared=prepared,
        settings=resolved.with_overrides(flags, COMMAND_LINE),
        loadgen_defaults=loadgen_defaults,
        loadgen_flags=loadgen_flags,
        audit_test=options.audit_test,
        command=options.argv,
        variant=run_variant(benchmark, options),
        created_log_dir_below=created_below,
    )


def unique_runners(runners: Sequence[Runner]) -> list[Runner]:
    """Each runner once, in order (a CPU backend lists one runner once per worker)."""
    return list({id(runner): runner for runner in runners}.values())


def show_config(benchmark: Benchmark, options: RunOptions) -> str:
    """The settings a run would use and where each comes from, without preparing anything: the
    config, a stand-in's short run and the flags; under them LoadGen's mlperf.conf values and the
    user.conf lines that apply, in the order a run layers them."""
    _system, resolved = resolve_settings(benchmark, options)
    backend = check_before_preparing(
        benchmark, options, resolved.settings.backend or "null", log_dir=False
    )
    resolved = with_run_layers(benchmark, options, backend, resolved)
    expected = benchmark.expected_run_defaults(options)
    if expected is not None:
        resolved = resolved.with_overrides(*expected)
    flags = command_line_layer(options, resolved.settings)
    lines = [resolved.with_overrides(flags, COMMAND_LINE).describe()]
    lines.append("LoadGen's mlperf.conf (built in), under the settings above and user.conf:")
    for name, value in mlperf_conf_values(benchmark.name, options.scenario).items():
        lines.append(f"  {name} = {value!r}")
    if options.user_conf is not None:
        conf = applicable(
            read_user_conf(options.user_conf, benchmark.name), benchmark.name, options.scenario
        )
        lines.append(
            f"user.conf {options.user_conf}, over the config and under the command line:"
            + ("" if conf else " nothing for this model and scenario")
        )
        lines += [f"  {line.text}  # line {line.number}" for line in conf]
    return "\n".join(lines)


class RemoteSUT(Protocol):
    """A SUT whose model runs elsewhere (the Triton harness's)."""

    issue_queries: Callable[[Sequence[Any]], None]

    def flush_queries(self) -> None: ...

    def samples_loaded(self, indices: Sequence[int]) -> None:
        """LoadGen now holds the samples at `indices` (before timing starts)."""

    def __enter__(self) -> Any: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...

    def to_json(self) -> dict[str, Any]:
        """Its record in result.json."""


class RemoteModel(Protocol):
    """A model served elsewhere (mlperf_harness/triton): it makes the SUT in place of runners."""

    @property
    def backend(self) -> str:
        """The servers' backend, recorded as the run's."""

    def make_sut(self, plan: RunPlan, batches: BatchSource) -> RemoteSUT: ...


def run_harness(
    benchmark: Benchmark, plan: RunPlan, remote: RemoteModel | None = None
) -> RunRecord:
    """Run the planned test and write its result.json. Ctrl-C or SIGTERM during the run ends the
    process (exit 130) with the log directory marked as interrupted (loadgen/interruption.py).
    `remote`: the model runs there instead of in this process's runners."""
    clear_run_outputs(plan.log_dir)  # an earlier run's result.json must not outlive this run
    try:
        return _run(benchmark, plan, remote)
    except BaseException:
        if plan.created_log_dir_below is not None:
            remove_if_empty(plan.log_dir, plan.created_log_dir_below)
        raise


def wrapped_runners(runners: Sequence[Runner], prepared: PreparedRun) -> list[Runner]:
    """The backend's runners, each wrapped by the benchmark where it asks (PreparedRun.wrap_runner);
    a runner listed several times (CPU workers sharing one) stays one shared wrapper."""
    wrap = prepared.wrap_runner
    if wrap is None:
        return list(runners)
    wrappers: dict[int, Runner] = {}
    return [wrappers.setdefault(id(runner), wrap(runner)) for runner in runners]


def run_backend_options(plan: RunPlan) -> BackendOptions:
    """What the backend is told for this run: the benchmark's options and the run's settings."""
    return backend_options_for(plan.prepared, plan.settings.settings)


def backend_options_for(prepared: PreparedRun, settings: HarnessSettings) -> BackendOptions:
    """The benchmark's backend options with these settings' (a run's, or a Triton server's)."""
    return replace(
        prepared.backend_options,
        intra_op_threads=settings.intra_op_threads,
        worker_count=settings.worker_count,
        gpu_inference_streams=settings.gpu_inference_streams,
        start_from_device=settings.start_from_device,
        batch_size=settings.batch_size,
        sim_gpus=settings.sim_gpus,
        sim_latency_table=settings.sim_latency_table,
    )


def _run(benchmark: Benchmark, plan: RunPlan, remote: RemoteModel | None) -> RunRecord:
    settings = plan.settings.settings
    prepared = plan.prepared
    loadgen_path = settings.loadgen_path or DEFAULT_LOADGEN_PATH
    runners = (
        []
        if remote is not None
        else wrapped_runners(create_runners(plan.backend, run_backend_options(plan)), prepared)
    )
    store = prepared.store
    scenario = plan.loadgen_flags.scenario
    batches = make_batch_source(scenario, settings)
    # One query at a time: answered on LoadGen's own thread, with no hand-over (see HarnessSUT).
    inline = scenario in (Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM)
    remote_sut = remote.make_sut(plan, batches) if remote is not None else None
    answered_here = inline and remote is None  # this process's SUT answers inline queries
    round_trips = choose_round_trips(
        runners,
        wanted=settings.native_round_trips,
        inline=answered_here,
        loadgen_path=loadgen_path,
        label_offset=prepared.label_offset,
        whole_responses=prepared.response_bytes is None,
    )
    if round_trips is not None:
        print(
            f"{benchmark.name}: each query answered in C++ on LoadGen's thread, launching the "
            "engines' round trip graphs (--no-native_round_trips: in Python)",
            file=sys.stderr,
        )
    sut: HarnessSUT | RemoteSUT = (
        remote_sut
        if remote_sut is not None
        else HarnessSUT(
            runners,
            store,
            batches,
            prepared.postprocess or benchmark.postprocess,
            inline=inline,
            response_bytes=prepared.response_bytes,
            hold_queries=scenario is Scenario.OFFLINE,
            loadgen_path=loadgen_path,
            round_trips=round_trips,
        )
    )

    distinct = unique_runners(runners)
    loaded: set[int] = set()  # what LoadGen holds now

    def load(indices: Sequence[int]) -> None:
        store.load(indices)
        loaded.update(indices)
        tell_runners()

    def unload(indices: Sequence[int]) -> None:
        store.unload(indices)
        loaded.difference_update(indices)
        tell_runners()

    def tell_runners() -> None:
        for runner in distinct:
            runner.samples_loaded(store)  # a GPU runner copies the samples to its device here
        if remote_sut is not None:
            remote_sut.samples_loaded(sorted(loaded))  # its servers hold them too, where staged

    with contextlib.ExitStack() as guarded, contextlib.ExitStack() as active:
        warmup = store.warmup_batch(settings.batch_size or 1)
        for runner in distinct:
            active.enter_context(runner)
            # The first call allocates and picks kernels; keep it out of LoadGen's timed run.
            runner.infer(warmup)
        # From the first file this run writes to its result: a signal ends the process at once,
        # marking the logs as partial (a failure before here leaves the directory empty).
        guarded.enter_context(exit_on_signal(plan.log_dir, benchmark.name))
        audit_config = write_run_configs(benchmark, plan)
        with sut:
            # Everything alive now (torch, numpy, the loaded samples) lives for the whole run: out
            # of the collector's sight, so that a full collection during the timed run walks only
            # what the run itself allocates.
            gc.collect()
            gc.freeze()
            try:
                result = run_under_loadgen(
                    sut,
                    SampleLibrary(store.total_count, store.performance_count, load, unload),
                    plan.loadgen_flags,
                    plan.log_dir,
                    plan.loadgen_defaults,
                    audit_config=audit_config,
                )
            finally:
                gc.unfreeze()
        active.close()  # the runners end inside the guard: a signal now still marks the logs
        # [report] The batch source's record of the run (issue and completion times, latency
        # histogram; harness/timeline.py), beside LoadGen's logs: the report draws it.
        write_timeline(plan.log_dir, batches)
        checks = plan.loadgen_flags.mode.checks_accuracy
        accuracy = benchmark.check_accuracy(plan.log_dir, prepared) if checks else None
    record = RunRecord(
        benchmark.name,
        plan.system,
        remote.backend if remote is not None else runners[0].name,
        plan.log_dir,
        result,
        prepared,
        accuracy,
        plan.settings,
        plan.audit_test,
        plan.command,
        plan.variant,
        triton=remote_sut.to_json() if remote_sut is not None else None,
        inline_answers=None
        if not answered_here
        else "C++ round trips"
        if round_trips is not None
        else "Python",
    )
    write_json_atomic(plan.log_dir / RESULT_FILE, record.to_json())
    return record


def write_run_configs(benchmark: Benchmark, plan: RunPlan) -> Path | None:
    """The run's effective user.conf and, for an audit, its audit.config (returned)."""
    write_text_atomic(
        plan.log_dir / USER_CONF_FILE,
        effective_user_conf(plan.loadgen_flags, plan.loadgen_defaults),
    )
    if plan.audit_test is None:
        return None
    audit_config = plan.log_dir / AUDIT_CONFIG_FILE
    text = audit_config_text(plan.audit_test, benchmark.accuracy_log_sampling_target)
    write_text_atomic(audit_config, text)
    return audit_config


def exit_status(record: RunRecord) -> int:
    """0 for a finished run, whatever its verdict; 1 where LoadGen logged errors (the submission
    checker refuses such logs, so the run must not pass for a good one)."""
    return 1 if record.result.errors else 0


def format_summary(record: RunRecord) -> str:
    result = record.result
    verdict = {True: "VALID", False: "INVALID", None: "n/a (no performance verdict)"}[result.valid]
    audit = f" audit {record.audit_test.value}" if record.audit_test is not None else ""
    lines = [
        f"{record.benchmark} {result.scenario} {result.mode}{audit} on {record.system_name} "
        f"(backend {record.backend})",
    ]
    if record.prepared.stand_in:
        lines.append(f"  *** {STAND_IN_NOTICE} ***")
    lines.append(f"  result:        {verdict}")
    for reason in result.invalid_reasons:
        lines.append(f"    - {reason}")
    if result.completed_samples_per_second is not None:
        lines.append(f"  completed samples/s: {result.completed_samples_per_second:,.1f}")
        lines.append(f"  scheduled samples/s: {result.scheduled_samples_per_second:,.1f}")
    elif result.samples_per_second is not None:
        lines.append(f"  samples/s:     {result.samples_per_second:,.1f}")
    latency = result.latency_ns
    if latency:
        percentiles = "  ".join(
            f"{name} {latency[name] / 1e6:.3f} ms"
            for name in ("p50", "p90", "p99")
            if name in latency
        )
        lines.append(f"  latency:       {percentiles}")
    if record.accuracy is not None:
        status = "PASS" if record.accuracy.passed else "FAIL"
        lines.append(f"  accuracy:      {record.accuracy.line}  [{status}]")
    lines.append(f"  logs:          {record.log_dir / RESULT_FILE}")
    return "\n".join(lines)
