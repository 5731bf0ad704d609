"""harness_overhead: the null backend over empty samples, so every microsecond is harness or LoadGen."""

from __future__ import annotations

from dataclasses import replace

from mlperf_harness.benchmarks.spec import BenchmarkSpec, ScenarioConfig
from mlperf_harness.harness.sample_store import EmptySampleStore, SampleStore
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario

NAME = "harness_overhead"
SAMPLE_COUNT = 1024  # as many as ResNet-50's performance sample count, so runs look alike


def scenario_config(scenario: Scenario) -> ScenarioConfig:
    # Short runs: the numbers settle within seconds because no model work adds variance.
    base = LoadgenSettings(model=NAME, scenario=scenario, min_duration_ms=10_000, min_query_count=1)
    if scenario is Scenario.OFFLINE:
        return ScenarioConfig(replace(base, offline_expected_qps=400_000), batch_size=1024)
    if scenario is Scenario.SERVER:
        return ScenarioConfig(
            replace(base, server_target_qps=5_000), batch_size=8, server_batch_timeout_us=500
        )
    if scenario is Scenario.MULTI_STREAM:
        return ScenarioConfig(base, batch_size=8)
    return ScenarioConfig(base, batch_size=1)


def make_store() -> SampleStore:
    return EmptySampleStore(SAMPLE_COUNT, SAMPLE_COUNT)


SPEC = BenchmarkSpec(
    name=NAME, default_backend="null", scenario_config=scenario_config, make_store=make_store
)
