"""The run_harness action: one benchmark, one scenario, one test mode under LoadGen -> result.json."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.registry import create_runner
from mlperf_harness.benchmarks.spec import (
    STAND_IN_NOTICE,
    AccuracyReport,
    Benchmark,
    PreparedRun,
    ScenarioConfig,
)
from mlperf_harness.cli.options import FAST_MIN_DURATION_MS, RunOptions
from mlperf_harness.harness.batching import BatchSource, DynamicBatcher, FixedBatches
from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.handles import query_sample_library, system_under_test
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.run import prepare_log_dir, run_test
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario
from mlperf_harness.systems.detect import detect_system

RESULT_FILE = "result.json"
DEFAULT_LOG_ROOT = Path("build/logs")


@dataclass(frozen=True)
class RunRecord:
    benchmark: str
    system_name: str
    backend: str
    log_dir: Path
    result: LoadgenResult
    prepared: PreparedRun
    accuracy: AccuracyReport | None

    def to_json(self) -> dict[str, Any]:
        result = self.result
        record: dict[str, Any] = {
            "benchmark": self.benchmark,
            "scenario": result.scenario,
            "test_mode": result.mode,
            "system_name": self.system_name,
            "backend": self.backend,
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
            record["accuracy"] = self.accuracy.record
        record["provenance"] = self.prepared.provenance
        record["loadgen"] = result.to_json()
        return record


def command_line_settings(config: ScenarioConfig, options: RunOptions) -> LoadgenSettings:
    """The layer above user.conf: what the command line asked for (the benchmark's defaults, in
    `config.loadgen`, sit below user.conf)."""
    min_duration_ms = options.min_duration_ms
    if options.fast and min_duration_ms is None:
        min_duration_ms = min(
            config.loadgen.min_duration_ms or FAST_MIN_DURATION_MS, FAST_MIN_DURATION_MS
        )
    return LoadgenSettings(
        model=config.loadgen.model,
        scenario=config.loadgen.scenario,
        mode=options.test_mode,
        user_conf=options.user_conf,
        min_duration_ms=min_duration_ms,
        min_query_count=options.min_query_count,
        offline_expected_qps=options.offline_expected_qps,
        server_target_qps=options.server_target_qps,
    )


def default_log_dir(system_name: str, benchmark: str, settings: LoadgenSettings) -> Path:
    stamp = time.strftime("%Y.%m.%d-%H.%M.%S")
    scenario, mode = str(settings.scenario.value), str(settings.mode.value)
    return DEFAULT_LOG_ROOT / stamp / system_name / benchmark / scenario / mode


def make_batch_source(scenario: Scenario, config: ScenarioConfig, batch_size: int) -> BatchSource:
    if scenario is Scenario.SERVER:
        return DynamicBatcher(batch_size, config.server_batch_timeout_us / 1e6)
    return FixedBatches(batch_size)


def run_harness(benchmark: Benchmark, options: RunOptions) -> RunRecord:
    config = benchmark.scenario_config(options.scenario)
    settings = command_line_settings(config, options)
    system_name = options.system_name or detect_system().default_name
    log_dir = prepare_log_dir(
        options.log_dir or default_log_dir(system_name, benchmark.name, settings)
    )
    batch_size = options.batch_size or config.batch_size
    backend = options.backend or benchmark.default_backend
    prepared = benchmark.prepare(options)
    runner = create_runner(backend, prepared.backend_options)
    store = prepared.store
    batches = make_batch_source(options.scenario, config, batch_size)
    sut = HarnessSUT(runner, store, batches, config.worker_count, benchmark.postprocess)
    with (
        runner,
        sut,
        system_under_test(sut.issue_queries, sut.flush_queries) as sut_handle,
        query_sample_library(
            store.total_count, store.performance_count, store.load, store.unload
        ) as qsl_handle,
    ):
        result = run_test(sut_handle, qsl_handle, settings, log_dir, config.loadgen)
    accuracy = benchmark.check_accuracy(log_dir, prepared) if settings.mode.checks_accuracy else None
    record = RunRecord(benchmark.name, system_name, runner.name, log_dir, result, prepared, accuracy)
    write_json_atomic(log_dir / RESULT_FILE, record.to_json())
    return record


def format_summary(record: RunRecord) -> str:
    result = record.result
    verdict = {True: "VALID", False: "INVALID", None: "n/a (no performance verdict)"}[result.valid]
    lines = [
        f"{record.benchmark} {result.scenario} {result.mode} on {record.system_name} "
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
