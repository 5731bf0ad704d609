"""The run_harness action: one benchmark, one scenario, one test mode under LoadGen -> result.json."""

from __future__ import annotations

import contextlib
import functools
import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_json_atomic, write_text_atomic
from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions, create_runners
from mlperf_harness.benchmarks.spec import STAND_IN_NOTICE, AccuracyReport, Benchmark, PreparedRun
from mlperf_harness.cli.log_dirs import (
    DEFAULT_LOG_ROOT,
    clear_run_outputs,
    create_default_log_dir,
    default_tail,
    remove_if_empty,
)
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.cli.run_settings import prepare_run
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.config.measured_rates import (
    MAX_ATTEMPTS,
    MEASURED,
    MEASURED_BY_EARLIER_ATTEMPT,
    RATE_FIELDS,
    derive_rates,
    given_rate_line,
    next_attempt,
    timing_plan,
)
from mlperf_harness.config.registry import ResolvedSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.engine_process import EngineProcess
from mlperf_harness.generation.prompts import PromptStore
from mlperf_harness.generation.runner import GenerationRunner
from mlperf_harness.generation.serving import GenerationSUT
from mlperf_harness.harness.batching import (
    BatchSource,
    DynamicBatcher,
    FixedBatches,
    length_buckets,
)
from mlperf_harness.harness.engine_timing import TIMING_SECONDS, time_engine
from mlperf_harness.harness.loadgen_paths import run_under_loadgen
from mlperf_harness.harness.round_trip_choice import choose_round_trips
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.harness.timeline import write_timeline
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.interruption import exit_on_signal
from mlperf_harness.loadgen.paths import DEFAULT_LOADGEN_PATH
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.run import prepare_log_dir
from mlperf_harness.loadgen.settings import (
    LoadgenSettings,
    Scenario,
    TestMode,
    effective_user_conf,
    to_test_settings,
)
from mlperf_harness.rate_text import rate_text
from mlperf_harness.run_files import RESULT_FILE, USER_CONF_FILE
from mlperf_harness.submission.audits import AUDIT_CONFIG_FILE, audit_config_text
from mlperf_harness.submission.rules import AuditTest

DEFAULT_SERVER_TIMEOUT_US = 2_000  # when a config sets no Server batching timeout
ALONE_SECONDS = 1.0  # Server's batches timed on one runner, after every runner's timing


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
    # What was timed at the run's start and what it set (measure_at_start); None: nothing was.
    measured: dict[str, Any] | None = None
    # The Triton harness's record (servers, losses, re-sent samples); None for the direct harness.
    triton: dict[str, Any] | None = None
    # SingleStream, MultiStream: what answered each query on LoadGen's thread ("C++ round trips":
    # harness/round_trip_choice.py; or "Python"); None for the other scenarios.
    inline_answers: str | None = None
    # A generative run's serving-loop record (generation/serving.py); None for the others.
    generation: dict[str, Any] | None = None

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
        if result.tokens_per_second is not None:
            record["tokens_per_second"] = result.tokens_per_second
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
        if self.measured is not None:
            record["measured_at_start"] = self.measured
        record["command"] = list(self.command)
        if self.inline_answers is not None:
            record["inline_answers"] = self.inline_answers
        if self.generation is not None:
            record["harness"] = "serving loop"
            record["generation"] = self.generation
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


def server_batch_timeout_us(settings: HarnessSettings) -> int:
    timeout_us = settings.server_batch_timeout_us
    return DEFAULT_SERVER_TIMEOUT_US if timeout_us is None else timeout_us


def make_batch_source(
    scenario: Scenario, settings: HarnessSettings, store: SampleStore | None = None
) -> BatchSource:
    """Server's dynamic batcher (with --server_length_buckets above 1, one queue per length range
    of the store's samples), else fixed batches; Offline's in length order where the store has
    sample lengths, unless --no-order_by_length."""
    batch_size = settings.batch_size or 1
    if scenario.loadgen is Scenario.SERVER:
        timeout_s = server_batch_timeout_us(settings) / 1e6
        buckets = settings.server_length_buckets or 1
        if buckets == 1:
            return DynamicBatcher(batch_size, timeout_s)
        lengths = _sample_lengths(store, "--server_length_buckets")
        return DynamicBatcher(batch_size, timeout_s, length_buckets(lengths, buckets))
    if scenario.loadgen is Scenario.OFFLINE and store is not None and settings.order_by_length:
        return FixedBatches(batch_size, _sample_lengths(store, "--order_by_length"))
    return FixedBatches(batch_size)


def _sample_lengths(store: SampleStore | None, setting: str) -> npt.NDArray[np.int64]:
    lengths = None if store is None else store.sample_lengths()
    if lengths is None:
        raise HarnessError(f"{setting}: this benchmark's samples have no lengths")
    return lengths


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
    # Fields no layer sets, measured at the run's start (config/measured_rates.py).
    to_measure: tuple[str, ...] = ()
    audit_test: AuditTest | None = None
    command: tuple[str, ...] = ()
    variant: RunVariant | None = None
    # Set where this plan created log_dir: a run that fails before LoadGen writes there removes it,
    # and its parents below this directory while they are empty (a default's timestamped folder).
    created_log_dir_below: Path | None = None


def plan_run(
    benchmark: Benchmark, options: RunOptions, prepare_backend: str | None = None
) -> RunPlan:
    """`prepare_backend`: the backend that `prepare` is told of, where it is not the run's (the
    Triton harness's client prepares the samples for "null": its servers hold the engines)."""
    layered, prepared = prepare_run(benchmark, options, prepare_backend=prepare_backend)
    # Created last, once nothing else can fail: a failed preparation leaves no empty folder.
    if options.log_dir is None:
        log_dir = default_log_dir(
            layered.system, benchmark.name, options.scenario, options.test_mode, options.audit_test
        )
        created_below: Path | None = DEFAULT_LOG_ROOT
    else:
        existed = options.log_dir.exists()
        log_dir = prepare_log_dir(options.log_dir)
        created_below = None if existed else log_dir.parent
    loadgen_flags = layered.loadgen_flags
    if options.audit_test is AuditTest.TEST06:
        # TEST06 checks each logged response's first token and token count: LoadGen logs them
        # only where the run records token latencies (GPT-J's mlperf.conf only infers them).
        loadgen_flags = replace(loadgen_flags, use_token_latencies=True)
    return RunPlan(
        system=layered.system,
        backend=layered.backend,
        log_dir=log_dir,
        prepared=prepared,
        settings=layered.resolved,
        loadgen_defaults=layered.loadgen_defaults,
        loadgen_flags=loadgen_flags,
        to_measure=layered.to_measure,
        audit_test=options.audit_test,
        command=options.argv,
        variant=run_variant(benchmark, options),
        created_log_dir_below=created_below,
    )


def unique_runners(runners: Sequence[Runner]) -> list[Runner]:
    """Each runner once, in order (a CPU backend lists one runner once per worker)."""
    return list({id(runner): runner for runner in runners}.values())


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

    def probe_runners(self, plan: RunPlan) -> list[Runner]:
        """Runners that send one batch at a time to the servers and wait for its answer: what a
        run whose rates are measured at its start times."""


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
    store = prepared.store
    generation = generation_runners(plan) if remote is None else None
    runners: list[Runner] = (
        []
        if remote is not None
        else list(generation)
        if generation is not None
        else wrapped_runners(create_runners(plan.backend, run_backend_options(plan)), prepared)
    )
    scenario = plan.loadgen_flags.scenario
    # One query at a time: answered on LoadGen's own thread, with no hand-over (see HarnessSUT).
    inline = scenario in (Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM)
    # This process's batch SUT answers inline queries (the serving loop answers on its thread).
    answered_here = inline and remote is None and generation is None
    round_trips = choose_round_trips(
        runners,
        wanted=settings.native_round_trips,
        inline=answered_here,
        loadgen_path=loadgen_path,
        label_offset=prepared.label_offset,
        whole_responses=prepared.response_bytes is None and prepared.sized_postprocess is None,
    )
    if round_trips is not None:
        print(
            f"{benchmark.name}: each query answered in C++ on LoadGen's thread, launching the "
            "engines' round trip graphs (--no-native_round_trips: in Python)",
            file=sys.stderr,
        )

    def make_test(plan: RunPlan) -> _Test:
        """A LoadGen test's batch source and SUT (a fresh pair for each attempt)."""
        batches = make_batch_source(scenario, plan.settings.settings, store)
        remote_sut = remote.make_sut(plan, batches) if remote is not None else None
        sut: HarnessSUT | RemoteSUT | GenerationSUT = (
            remote_sut
            if remote_sut is not None
            else serving_loop(plan, generation)
            if generation is not None
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
                sized_postprocess=prepared.sized_postprocess,
            )
        )
        return _Test(batches, sut, remote_sut)

    test = make_test(plan)
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
        if test.remote_sut is not None:
            test.remote_sut.samples_loaded(sorted(loaded))  # its servers hold them too, if staged

    with contextlib.ExitStack() as guarded, contextlib.ExitStack() as active:
        warmup = store.warmup_batch(settings.batch_size or 1)
        for runner in distinct:
            active.enter_context(runner)
            # The first call allocates and picks kernels; keep it out of LoadGen's timed run.
            runner.infer(warmup)
        measured: dict[str, Any] | None = None
        if plan.to_measure:
            timed = distinct if remote is None else remote.probe_runners(plan)
            plan, measured = measure_at_start(benchmark, plan, timed, load, unload)
        # From the first file this run writes to its result: a signal ends the process at once,
        # marking the logs as partial (a failure before here leaves the directory empty).
        guarded.enter_context(exit_on_signal(plan.log_dir, benchmark.name))
        result = _loadgen_test(benchmark, plan, test, store, load, unload)
        attempts = 1
        while attempts < MAX_ATTEMPTS and (
            again := plan_after_early_end(benchmark, plan, measured, result)
        ):
            plan = again
            clear_run_outputs(plan.log_dir)  # the earlier attempt's LoadGen logs
            test = make_test(plan)
            result = _loadgen_test(benchmark, plan, test, store, load, unload)
            attempts += 1
        active.close()  # the runners end inside the guard: a signal now still marks the logs
        # [report] The batch source's record of the run (issue and completion times, latency
        # histogram; harness/timeline.py), beside LoadGen's logs: the report draws it.
        if generation is None:  # the serving loop forms no batches
            write_timeline(plan.log_dir, test.batches)
        checks = plan.loadgen_flags.mode.checks_accuracy
        accuracy = benchmark.check_accuracy(plan.log_dir, prepared) if checks else None
    sut = test.sut
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
        measured=measured,
        triton=test.remote_sut.to_json() if test.remote_sut is not None else None,
        generation=sut.to_json() if isinstance(sut, GenerationSUT) else None,
        inline_answers=None
        if not answered_here
        else "C++ round trips"
        if round_trips is not None
        else "Python",
    )
    write_json_atomic(plan.log_dir / RESULT_FILE, record.to_json())
    return record


@dataclass
class _Test:
    """One LoadGen test's batch source and SUT."""

    batches: BatchSource
    sut: HarnessSUT | RemoteSUT | GenerationSUT
    remote_sut: RemoteSUT | None  # the same SUT, where the model runs elsewhere


def plan_after_early_end(
    benchmark: Benchmark, plan: RunPlan, measured: dict[str, Any] | None, result: LoadgenResult
) -> RunPlan | None:
    """The plan of another attempt, where this one's rate, measured at start or by an earlier
    attempt, proved wrong for this machine as it runs now (config/measured_rates.next_attempt);
    this attempt's figures added to `measured` (result.json's record). None: no other attempt."""
    scenario = plan.loadgen_flags.scenario
    again = next_attempt(plan.to_measure, scenario, result)
    if again is None:
        field = RATE_FIELDS[scenario.loadgen]
        line = given_rate_line(plan.to_measure, scenario, result, plan.settings.origin_of(field))
        if line is not None:
            print(f"{benchmark.name}: {line}", file=sys.stderr, flush=True)
    if again is None or measured is None:
        return None
    print(f"{benchmark.name}: {again.line}", file=sys.stderr, flush=True)
    values = {name: getattr(again.settings, name) for name in again.settings.set_fields()}
    measured.setdefault("earlier_attempts", []).append(
        {
            **{name: getattr(plan.settings.settings, name) for name in values},
            "samples_per_second": result.samples_per_second,
            "latency_ns": result.latency_ns,
            "invalid_reasons": result.invalid_reasons,
            "set": values,
        }
    )
    return replace(
        plan,
        settings=plan.settings.with_overrides(again.settings, MEASURED_BY_EARLIER_ATTEMPT),
        loadgen_defaults=replace(plan.loadgen_defaults, **values),
    )


def _loadgen_test(
    benchmark: Benchmark,
    plan: RunPlan,
    test: _Test,
    store: SampleStore,
    load: Callable[[Sequence[int]], None],
    unload: Callable[[Sequence[int]], None],
) -> LoadgenResult:
    """The planned LoadGen test of `test`'s SUT (entered here), with its user.conf written first."""
    audit_config = write_run_configs(benchmark, plan)
    with test.sut:
        # Everything alive now (torch, numpy, the loaded samples) lives for the whole run: out
        # of the collector's sight, so that a full collection during the timed run walks only
        # what the run itself allocates.
        gc.collect()
        gc.freeze()
        try:
            return run_under_loadgen(
                test.sut,
                SampleLibrary(store.total_count, store.performance_count, load, unload),
                plan.loadgen_flags,
                plan.log_dir,
                plan.loadgen_defaults,
                audit_config=audit_config,
            )
        finally:
            gc.unfreeze()


def generation_runners(plan: RunPlan) -> list[GenerationRunner] | None:
    """A generative benchmark's engines as runners, one per engine (PreparedRun.make_engines);
    None for the other benchmarks."""
    prepared = plan.prepared
    if prepared.make_engines is None:
        return None
    store = prepared.store
    if not isinstance(store, PromptStore):
        raise TypeError("a generative benchmark's samples must be a PromptStore")
    makers = prepared.make_engines()
    if plan.settings.settings.engine_processes:
        makers = [
            functools.partial(EngineProcess, make, f"engine {i}") for i, make in enumerate(makers)
        ]
    return [GenerationRunner(plan.backend, make, store) for make in makers]


def serving_loop(plan: RunPlan, runners: Sequence[GenerationRunner]) -> GenerationSUT:
    """The SUT of a generative run: a serving loop over each runner's engine, answering
    mlperf_loadgen (LoadGen's Python binding: the native one has no FirstTokenComplete here)."""
    store = plan.prepared.store
    assert isinstance(store, PromptStore)  # generation_runners checked it
    return GenerationSUT(
        [functools.partial(_engine_of, runner) for runner in runners],
        store,
        token_dtype=plan.prepared.response_dtype or "int64",
        report_first_tokens=plan.loadgen_flags.scenario is not Scenario.OFFLINE,
        admit_batch=plan.settings.settings.admit_batch or 1,
    )


def _engine_of(runner: GenerationRunner) -> DecoderEngine:
    return runner.engine


def measure_at_start(
    benchmark: Benchmark,
    plan: RunPlan,
    runners: Sequence[Runner],
    load: Callable[[Sequence[int]], None],
    unload: Callable[[Sequence[int]], None],
) -> tuple[RunPlan, dict[str, Any]]:
    """The plan with the fields it leaves to measurement set from the engine as timed now, through
    `runners`, on a few real samples loaded for the purpose (config/measured_rates.py); and the
    record of it for result.json."""
    scenario = plan.loadgen_flags.scenario
    settings = plan.settings.settings
    if runners and isinstance(runners[0], GenerationRunner):
        # A call generates as many samples as the engine decodes together (its slots: on a GPU,
        # as many as fill its memory, known only once it is made).
        settings = replace(settings, batch_size=runners[0].engine.slots)
    effective = to_test_settings(plan.loadgen_flags, plan.loadgen_defaults)
    timing_at = timing_plan(scenario, settings, effective.multi_stream_samples_per_query)
    lanes = list(runners) if timing_at.every_runner else list(runners[:1])
    store = plan.prepared.store
    count = min(
        store.performance_count, store.total_count, max(8, 2 * timing_at.batch_size * len(lanes))
    )
    indices = list(range(count))
    print(
        f"{benchmark.name}: no config for {plan.system} and this engine sets"
        f" {', '.join(plan.to_measure)}: timing"
        f" the engine for about {TIMING_SECONDS:g} s before LoadGen starts (docs/rates.md)",
        file=sys.stderr,
        flush=True,
    )
    load(indices)
    try:
        timing = time_engine(lanes, store, indices, timing_at.batch_size)
        # Server's bound is judged on a batch with the engine to itself (derive_rates).
        alone = (
            time_engine(lanes[:1], store, indices, timing_at.batch_size, seconds=ALONE_SECONDS)
            if scenario.loadgen is Scenario.SERVER and len(lanes) > 1
            else None
        )
    finally:
        unload(indices)
    rates = derive_rates(
        plan.to_measure,
        scenario,
        timing,
        timing_at,
        latency_bound_ns=effective.server_target_latency_ns,
        batch_timeout_us=server_batch_timeout_us(settings),
        alone=alone,
    )
    print(f"{benchmark.name}: {rates.line}", file=sys.stderr, flush=True)
    if rates.warning is not None:
        print(f"{benchmark.name}: warning: {rates.warning}", file=sys.stderr, flush=True)
    values = {name: getattr(rates.settings, name) for name in rates.settings.set_fields()}
    plan = replace(
        plan,
        settings=plan.settings.with_overrides(rates.settings, MEASURED),
        loadgen_defaults=replace(plan.loadgen_defaults, **values),
    )
    record = {"timing": timing.to_json(), "set": values}
    if alone is not None:
        record["timing_one_runner"] = alone.to_json()
    return plan, record


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
        lines.append(f"  completed samples/s: {rate_text(result.completed_samples_per_second)}")
        lines.append(f"  scheduled samples/s: {rate_text(result.scheduled_samples_per_second)}")
    elif result.samples_per_second is not None:
        lines.append(f"  samples/s:     {rate_text(result.samples_per_second)}")
    if result.tokens_per_second is not None:
        lines.append(f"  tokens/s:      {result.tokens_per_second:,.1f}")
    for label, values in (
        ("latency:      ", result.latency_ns),
        ("TTFT:         ", result.first_token_ns),
        ("TPOT:         ", result.time_per_output_token_ns),
    ):
        if values:
            percentiles = "  ".join(
                f"{name} {values[name] / 1e6:.3f} ms"
                for name in ("p50", "p90", "p99")
                if name in values
            )
            lines.append(f"  {label} {percentiles}")
    if record.accuracy is not None:
        status = "PASS" if record.accuracy.passed else "FAIL"
        lines.append(f"  accuracy:      {record.accuracy.line}  [{status}]")
    lines.append(f"  logs:          {record.log_dir / RESULT_FILE}")
    return "\n".join(lines)
