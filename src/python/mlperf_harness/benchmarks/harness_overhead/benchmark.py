"""harness_overhead: the null backend over empty samples, so every microsecond is harness or LoadGen."""

from __future__ import annotations

from dataclasses import replace

from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.spec import Benchmark, PreparedRun, ScenarioConfig
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario

SAMPLE_COUNT = 1024  # as many as ResNet-50's performance sample count, so runs look alike


class HarnessOverhead(Benchmark):
    name = "harness_overhead"
    default_backend = "null"

    def scenario_config(self, scenario: Scenario) -> ScenarioConfig:
        # Short runs: the numbers settle within seconds because no model work adds variance.
        base = LoadgenSettings(
            model=self.name, scenario=scenario, min_duration_ms=10_000, min_query_count=1
        )
        if scenario is Scenario.OFFLINE:
            return ScenarioConfig(replace(base, offline_expected_qps=400_000), batch_size=1024)
        if scenario is Scenario.SERVER:
            return ScenarioConfig(
                replace(base, server_target_qps=5_000), batch_size=8, server_batch_timeout_us=500
            )
        if scenario is Scenario.MULTI_STREAM:
            return ScenarioConfig(base, batch_size=8)
        return ScenarioConfig(base, batch_size=1)

    def prepare(self, options: RunOptions) -> PreparedRun:
        return PreparedRun(EmptySampleStore(SAMPLE_COUNT, SAMPLE_COUNT), BackendOptions())


BENCHMARK = HarnessOverhead()
