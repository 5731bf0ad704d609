from __future__ import annotations

from pathlib import Path

import mlperf_loadgen as lg
import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode, to_test_settings


def test_scenario_and_mode_map_to_loadgen() -> None:
    settings = LoadgenSettings(
        model="resnet50", scenario=Scenario.SERVER, mode=TestMode.ACCURACY_ONLY
    )
    test_settings = to_test_settings(settings)
    assert test_settings.scenario == lg.TestScenario.Server
    assert test_settings.mode == lg.TestMode.AccuracyOnly


def test_builtin_mlperf_conf_applies_for_known_model() -> None:
    test_settings = to_test_settings(LoadgenSettings(model="resnet50", scenario=Scenario.SERVER))
    # mlperf.conf: ResNet-50 Server has a 15 ms latency bound and 1024 performance samples.
    assert test_settings.server_target_latency_ns == 15_000_000
    assert test_settings.performance_sample_count_override == 1024
    assert test_settings.min_duration_ms == 600_000


def test_user_conf_overrides_mlperf_conf_and_fields_override_both(tmp_path: Path) -> None:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text(
        "resnet50.Offline.target_qps = 1234\nresnet50.Offline.min_duration = 5000\n"
    )
    from_conf = to_test_settings(
        LoadgenSettings(model="resnet50", scenario=Scenario.OFFLINE, user_conf=user_conf)
    )
    assert from_conf.offline_expected_qps == 1234
    assert from_conf.min_duration_ms == 5000
    overridden = to_test_settings(
        LoadgenSettings(
            model="resnet50",
            scenario=Scenario.OFFLINE,
            user_conf=user_conf,
            offline_expected_qps=99.5,
            min_duration_ms=700,
            min_query_count=3,
        )
    )
    assert overridden.offline_expected_qps == 99.5
    assert overridden.min_duration_ms == 700
    assert overridden.min_query_count == 3


def test_multistream_and_sample_count_fields() -> None:
    test_settings = to_test_settings(
        LoadgenSettings(
            model="harness_overhead",
            scenario=Scenario.MULTI_STREAM,
            multi_stream_samples_per_query=8,
            performance_sample_count=64,
            multi_stream_expected_latency_ns=2_000_000,
        )
    )
    assert test_settings.multi_stream_samples_per_query == 8
    assert test_settings.performance_sample_count_override == 64
    assert test_settings.multi_stream_expected_latency_ns == 2_000_000


def test_missing_user_conf_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"user\.conf not found"):
        LoadgenSettings(model="resnet50", scenario=Scenario.OFFLINE, user_conf=tmp_path / "nope")


@pytest.mark.parametrize("field", ["min_duration_ms", "server_target_qps", "min_query_count"])
def test_non_positive_values_are_rejected(field: str) -> None:
    with pytest.raises(HarnessError, match=f"{field} must be positive"):
        LoadgenSettings(model="resnet50", scenario=Scenario.OFFLINE, **{field: 0})  # type: ignore[arg-type]


def test_parse_names() -> None:
    assert Scenario.parse("singlestream") is Scenario.SINGLE_STREAM
    assert Scenario.parse("Multi_Stream") is Scenario.MULTI_STREAM
    assert TestMode.parse("submissionrun") is TestMode.SUBMISSION_RUN
    with pytest.raises(HarnessError, match="unknown scenario 'Batch'"):
        Scenario.parse("Batch")
    with pytest.raises(HarnessError, match="unknown test mode"):
        TestMode.parse("Fastest")
