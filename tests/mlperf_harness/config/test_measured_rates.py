"""The rules that turn an engine timed at a run's start into LoadGen's expected rates."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.config.measured_rates import (
    BOUND_FIELD,
    EARLY_END_HEADROOM,
    OFFLINE_HEADROOM,
    RAN_OUT_OF_QUERIES,
    SERVER_LOAD,
    STAND_IN_BOUND_FACTOR,
    derive_rates,
    given_rate_line,
    next_attempt,
    rates_of_another_engine,
    rates_to_measure,
    timing_plan,
)
from mlperf_harness.config.registry import ConfigKey, FieldOrigin, ResolvedSettings
from mlperf_harness.harness.engine_timing import EngineTiming
from mlperf_harness.loadgen.results import MIN_DURATION_UNMET, LoadgenResult
from mlperf_harness.loadgen.settings import Scenario, TestMode
from mlperf_harness.loadgen.user_conf import ConfLine

PERF = TestMode.PERFORMANCE_ONLY
# 20 calls of 4 samples, one runner, 2 s: 40 samples/s; the fastest call 50 ms (peak 80/s), p99 90.
TIMING = EngineTiming(
    batch_size=4,
    runners=1,
    seconds=2.0,
    latencies_ns=tuple([50_000_000] + [70_000_000] * 18 + [90_000_000]),
)


def _line(key: str) -> ConfLine:
    return ConfLine(number=1, model="resnet50", scenario="*", key=key, value="5")


def test_a_given_offline_rate_that_the_run_outran_gets_one_line_saying_what_to_give() -> None:
    ended_early = LoadgenResult(
        "Offline", "PerformanceOnly", valid=False, invalid_reasons=[MIN_DURATION_UNMET],
        samples_per_second=24.16,
    )  # fmt: skip
    origin = "config H200-SXM-141GBx1"
    line = given_rate_line((), Scenario.OFFLINE, ended_early, origin)
    assert line is not None
    assert "faster (24.2 samples/s) than its offline_expected_qps (config H200-SXM-141GBx1)" in line
    assert "INVALID; give --offline_expected_qps 30.2 (1.25x that rate)" in line
    # measured at start: the run goes again instead (next_attempt); other reasons and scenarios,
    # and a run that did not end early: nothing to say
    assert given_rate_line(("offline_expected_qps",), Scenario.OFFLINE, ended_early, origin) is None
    other = LoadgenResult("Offline", "PerformanceOnly", valid=False, invalid_reasons=["x"])
    assert given_rate_line((), Scenario.OFFLINE, other, origin) is None
    assert given_rate_line((), Scenario.SERVER, ended_early, origin) is None


@pytest.mark.parametrize(
    ("scenario", "field"),
    [
        (Scenario.OFFLINE, "offline_expected_qps"),
        (Scenario.SERVER, "server_target_qps"),
        (Scenario.SINGLE_STREAM, "single_stream_expected_latency_ns"),
        (Scenario.MULTI_STREAM, "multi_stream_expected_latency_ns"),
    ],
)
def test_the_scenarios_rate_is_measured_unless_a_layer_sets_it(
    scenario: Scenario, field: str
) -> None:
    empty = HarnessSettings()
    assert rates_to_measure(empty, scenario, PERF, [], stand_in=False) == (field,)
    # A config, custom system or flag that sets it wins...
    given = HarnessSettings(**cast(dict[str, Any], {field: 1_000}))
    assert rates_to_measure(given, scenario, PERF, [], stand_in=False) == ()
    # ...and so does a user.conf line for it.
    key = "target_qps" if field.endswith("qps") else "target_latency"
    assert rates_to_measure(empty, scenario, PERF, [_line(key)], stand_in=False) == ()


def test_accuracy_runs_measure_only_servers_pace() -> None:
    empty = HarnessSettings()
    accuracy = TestMode.ACCURACY_ONLY
    assert rates_to_measure(empty, Scenario.OFFLINE, accuracy, [], stand_in=False) == ()
    assert rates_to_measure(empty, Scenario.SERVER, accuracy, [], stand_in=False) == (
        "server_target_qps",
    )


def test_a_stand_ins_server_bound_is_left_to_measurement_unless_set() -> None:
    empty = HarnessSettings()
    fields = rates_to_measure(empty, Scenario.SERVER, PERF, [], stand_in=True)
    assert fields == ("server_target_qps", BOUND_FIELD)
    bound = HarnessSettings(server_target_latency_ns=1_000_000)
    assert BOUND_FIELD not in rates_to_measure(bound, Scenario.SERVER, PERF, [], stand_in=True)
    conf = [_line("target_latency")]
    assert BOUND_FIELD not in rates_to_measure(empty, Scenario.SERVER, PERF, conf, stand_in=True)


def test_offline_sizes_its_query_above_the_engines_peak() -> None:
    plan = timing_plan(Scenario.OFFLINE, HarnessSettings(batch_size=4), 8)
    assert plan.batch_size == 4 and plan.every_runner
    rates = derive_rates(
        ["offline_expected_qps"], Scenario.OFFLINE, TIMING, plan, latency_bound_ns=None,
        batch_timeout_us=0,
    )  # fmt: skip
    assert rates.settings.offline_expected_qps == pytest.approx(OFFLINE_HEADROOM * 80.0)
    assert rates.settings.set_fields() == ("offline_expected_qps",)
    assert "offline_expected_qps = 100.0" in rates.line and "20 calls of 4" in rates.line


def test_latency_scenarios_expect_their_fastest_query() -> None:
    single = timing_plan(Scenario.SINGLE_STREAM, HarnessSettings(batch_size=8), 8)
    assert (single.batch_size, single.every_runner, single.calls_per_query) == (1, False, 1)
    rates = derive_rates(
        ["single_stream_expected_latency_ns"], Scenario.SINGLE_STREAM, TIMING, single,
        latency_bound_ns=None, batch_timeout_us=0,
    )  # fmt: skip
    assert rates.settings.single_stream_expected_latency_ns == 50_000_000
    # MultiStream's 8 samples in batches of 4: two calls a query.
    multi = timing_plan(Scenario.MULTI_STREAM, HarnessSettings(batch_size=4), 8)
    assert (multi.batch_size, multi.calls_per_query) == (4, 2)
    rates = derive_rates(
        ["multi_stream_expected_latency_ns"], Scenario.MULTI_STREAM, TIMING, multi,
        latency_bound_ns=None, batch_timeout_us=0,
    )  # fmt: skip
    assert rates.settings.multi_stream_expected_latency_ns == 100_000_000


def test_server_runs_at_half_the_rate_and_a_stand_in_widens_a_bound_it_cannot_meet() -> None:
    plan = timing_plan(Scenario.SERVER, HarnessSettings(batch_size=4), 8)
    fields = ["server_target_qps", BOUND_FIELD]
    # ResNet-50's 15 ms against a 90 ms p99 batch and a 10 ms timeout: widened to 4 x 100 ms.
    rates = derive_rates(
        fields, Scenario.SERVER, TIMING, plan, latency_bound_ns=15_000_000, batch_timeout_us=10_000
    )
    assert rates.settings.server_target_qps == pytest.approx(SERVER_LOAD * 40.0)
    assert rates.settings.server_target_latency_ns == STAND_IN_BOUND_FACTOR * 100_000_000
    assert rates.warning is None
    # A bound the batches meet is left alone.
    rates = derive_rates(
        fields, Scenario.SERVER, TIMING, plan, latency_bound_ns=100_000_000, batch_timeout_us=0
    )
    assert rates.settings.server_target_latency_ns is None
    # Runners that shared the engine are judged by a batch timed alone: 20 ms, not 90.
    alone = EngineTiming(batch_size=4, runners=1, seconds=1.0, latencies_ns=(20_000_000,) * 10)
    rates = derive_rates(
        fields, Scenario.SERVER, TIMING, plan, latency_bound_ns=50_000_000,
        batch_timeout_us=10_000, alone=alone,
    )  # fmt: skip
    assert rates.settings.server_target_latency_ns is None
    assert rates.settings.server_target_qps == pytest.approx(SERVER_LOAD * 40.0)
    # A real run (the bound not left to measurement) keeps it, and says the run cannot meet it.
    rates = derive_rates(
        ["server_target_qps"], Scenario.SERVER, TIMING, plan, latency_bound_ns=15_000_000,
        batch_timeout_us=10_000,
    )  # fmt: skip
    assert rates.settings.server_target_latency_ns is None
    assert rates.warning is not None and "expect INVALID" in rates.warning
    # The LLMs' mlperf.conf bound of 0 (their token latencies bound them instead): no warning
    rates = derive_rates(
        ["server_target_qps"], Scenario.SERVER, TIMING, plan, latency_bound_ns=0,
        batch_timeout_us=10_000,
    )  # fmt: skip
    assert rates.warning is None
    assert rates.settings.server_target_qps == pytest.approx(SERVER_LOAD * 40.0)


def test_an_offline_run_that_ended_early_is_run_again_at_its_own_rate() -> None:
    ended_early = LoadgenResult(
        "Offline",
        "PerformanceOnly",
        valid=False,
        invalid_reasons=[MIN_DURATION_UNMET, "Increase expected QPS so the loadgen ..."],
        samples_per_second=160.5,
    )
    again = next_attempt(("offline_expected_qps",), Scenario.OFFLINE, ended_early)
    assert again is not None
    assert again.settings == HarnessSettings(
        offline_expected_qps=round(EARLY_END_HEADROOM * 160.5, 3)
    )
    assert "running it again at offline_expected_qps = 200.625" in again.line
    # A rate the user or a config gave is theirs to fix; other reasons, other scenarios: no rerun.
    assert next_attempt((), Scenario.OFFLINE, ended_early) is None
    other = LoadgenResult("Offline", "PerformanceOnly", valid=False, invalid_reasons=["x"])
    assert next_attempt(("offline_expected_qps",), Scenario.OFFLINE, other) is None
    assert next_attempt(("server_target_qps",), Scenario.SERVER, ended_early) is None


@pytest.mark.parametrize(
    ("scenario", "field"),
    [
        (Scenario.SINGLE_STREAM, "single_stream_expected_latency_ns"),
        (Scenario.MULTI_STREAM, "multi_stream_expected_latency_ns"),
    ],
)
def test_a_latency_run_that_ran_out_of_queries_is_run_again_at_its_fastest_query(
    scenario: Scenario, field: str
) -> None:
    ran_out = LoadgenResult(
        scenario.value,
        "PerformanceOnly",
        valid=False,
        latency_ns={"min": 1_200_000, "p90": 1_500_000},
        errors=[f"Ending early: {RAN_OUT_OF_QUERIES} to issue before the minimum ..."],
    )
    again = next_attempt((field,), scenario, ran_out)
    assert again is not None
    assert getattr(again.settings, field) == 1_200_000 and again.settings.set_fields() == (field,)
    assert next_attempt((), scenario, ran_out) is None
    finished = LoadgenResult(scenario.value, "PerformanceOnly", valid=True, latency_ns={"min": 5})
    assert next_attempt((field,), scenario, finished) is None


def test_a_configs_rates_are_not_another_engines() -> None:
    # The H200 config names the engine (torch, fp16) and the rates measured with it; a system
    # file gives a Server rate and names no engine.
    gpu, system_file = "configs.GPU", "systems/box.json"
    below = ResolvedSettings(
        "box",
        ConfigKey("gptj", Scenario.OFFLINE, "box"),
        HarnessSettings(
            backend="torch", precision="fp16", offline_expected_qps=18.9, server_target_qps=17.0
        ),
        (
            FieldOrigin("backend", gpu),
            FieldOrigin("precision", gpu),
            FieldOrigin("offline_expected_qps", gpu),
            FieldOrigin("server_target_qps", system_file),
        ),
    )
    fp8 = HarnessSettings(precision="fp8")
    assert rates_of_another_engine(below, fp8) == ("offline_expected_qps",)
    assert rates_of_another_engine(below, HarnessSettings(backend="onnxruntime")) == (
        "offline_expected_qps",
    )
    # The same engine named again, or a rate given with the new engine: nothing to drop.
    assert rates_of_another_engine(below, HarnessSettings(precision="fp16")) == ()
    assert rates_of_another_engine(below, HarnessSettings(batch_size=4)) == ()
    assert rates_of_another_engine(below, replace(fp8, offline_expected_qps=30.0)) == ()
    dropped = below.without(rates_of_another_engine(below, fp8))
    assert dropped.settings.offline_expected_qps is None
    assert dropped.origin_of("offline_expected_qps") is None
    assert dropped.settings.server_target_qps == 17.0
