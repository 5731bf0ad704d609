from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from mlperf_harness.config.fields import (
    ALL_SCENARIOS,
    HarnessSettings,
    applicable_settings,
    describe_fields,
    field_info,
    setting_names,
    value_type,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode

LOADGEN_FIELDS = {
    "min_duration_ms",
    "max_duration_ms",
    "min_query_count",
    "max_query_count",
    "performance_sample_count",
    "offline_expected_qps",
    "server_target_qps",
    "server_target_latency_ns",
    "single_stream_expected_latency_ns",
    "multi_stream_expected_latency_ns",
    "multi_stream_samples_per_query",
}


def test_every_field_is_an_optional_setting_with_help_and_scenarios() -> None:
    for field in dataclasses.fields(HarnessSettings):
        info = field_info(field.name)
        assert field.default is None
        assert info.help
        assert info.scenarios
        assert value_type(field.name) in (int, float, str, bool)


def test_table_holds_the_required_settings_with_their_scenarios() -> None:
    harness_fields = {
        "batch_size",
        "worker_count",
        "backend",
        "precision",
        "intra_op_threads",
        "server_batch_timeout_us",
        "server_length_buckets",
        "gpu_inference_streams",
        "start_from_device",
        "end_on_device",
        "embedding_placement",
        "embedding",
        "cross",
        "nms",
        "fp8_activations",
        "prefill",
        "tensor_parallel",
        "admit_batch",
        "engine_processes",
        "sim_gpus",
        "sim_latency_table",
        "loadgen_path",
        "native_round_trips",
        "order_by_length",
    }
    assert harness_fields | LOADGEN_FIELDS == set(setting_names())
    assert field_info("server_batch_timeout_us").scenarios == {Scenario.SERVER}
    assert field_info("server_length_buckets").scenarios == {Scenario.SERVER}
    assert field_info("offline_expected_qps").scenarios == {Scenario.OFFLINE}
    assert field_info("server_target_qps").scenarios == {Scenario.SERVER}
    assert field_info("server_target_latency_ns").scenarios == {Scenario.SERVER}
    assert field_info("single_stream_expected_latency_ns").scenarios == {Scenario.SINGLE_STREAM}
    assert field_info("multi_stream_expected_latency_ns").scenarios == {Scenario.MULTI_STREAM}
    assert field_info("multi_stream_samples_per_query").scenarios == {Scenario.MULTI_STREAM}
    assert field_info("batch_size").scenarios == ALL_SCENARIOS
    assert field_info("native_round_trips").scenarios == {
        Scenario.SINGLE_STREAM,
        Scenario.MULTI_STREAM,
    }
    assert field_info("order_by_length").scenarios == {Scenario.OFFLINE}
    assert value_type("offline_expected_qps") is float
    assert value_type("batch_size") is int
    assert value_type("precision") is str


def test_loadgen_flag_marks_exactly_the_fields_loadgen_settings_has() -> None:
    flagged = {name for name in setting_names() if field_info(name).loadgen}
    assert flagged == LOADGEN_FIELDS
    loadgen_settings_fields = {field.name for field in dataclasses.fields(LoadgenSettings)}
    assert flagged <= loadgen_settings_fields


def test_applicable_settings_follow_the_table() -> None:
    offline = applicable_settings(Scenario.OFFLINE)
    assert "offline_expected_qps" in offline
    assert "server_target_qps" not in offline
    assert "server_batch_timeout_us" in applicable_settings(Scenario.SERVER)


def test_describe_fields_is_a_table_of_every_setting() -> None:
    table = describe_fields()
    lines = table.splitlines()
    assert lines[0].split() == ["setting", "type", "scenarios", "description"]
    assert len(lines) == 1 + len(setting_names())
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["precision"][1:3] == ["fp32|fp16|bf16|int8|fp8", "all"]
    assert rows["server_target_qps"][1:3] == ["float", "Server"]
    # Aligned: every row's description starts in the same column.
    start = lines[0].index("description")
    help_text = field_info("batch_size").help
    assert next(line for line in lines if line.startswith("batch_size ")).index(help_text) == start


def test_int_for_a_float_field_becomes_a_float() -> None:
    settings = HarnessSettings(offline_expected_qps=5000)
    assert settings.offline_expected_qps == 5000.0
    assert isinstance(settings.offline_expected_qps, float)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("batch_size", True, "batch_size must be int, got bool True"),
        ("batch_size", 2.5, "batch_size must be int, got float 2.5"),
        ("batch_size", "32", "batch_size must be int, got str '32'"),
        ("offline_expected_qps", False, "offline_expected_qps must be float, got bool False"),
        ("backend", 3, "backend must be str, got int 3"),
        ("precision", "int4", "precision must be one of fp32, fp16, bf16, int8, fp8, got 'int4'"),
        ("precision", 8, "precision must be fp32|fp16|bf16|int8|fp8, got int 8"),
        ("batch_size", 0, "batch_size must be positive, got 0"),
        ("min_duration_ms", -1, "min_duration_ms must be positive, got -1"),
        ("server_batch_timeout_us", -5, "server_batch_timeout_us must be non-negative, got -5"),
        ("server_target_qps", math.inf, "server_target_qps must be a finite number, got inf"),
        ("start_from_device", 1, "start_from_device must be bool, got int 1"),
        ("end_on_device", "yes", "end_on_device must be bool, got str 'yes'"),
    ],
)
def test_bad_values_are_refused_with_one_line(name: str, value: object, message: str) -> None:
    with pytest.raises(HarnessError) as raised:
        HarnessSettings(**{name: value})  # type: ignore[arg-type]  # the wrong types are the test
    assert str(raised.value) == message


def test_switches_take_true_and_false() -> None:
    settings = HarnessSettings(start_from_device=True, end_on_device=False)
    assert settings.start_from_device is True and settings.end_on_device is False
    assert settings.set_fields() == ("start_from_device", "end_on_device")


def test_zero_batch_timeout_is_allowed() -> None:
    assert HarnessSettings(server_batch_timeout_us=0).server_batch_timeout_us == 0


def test_set_fields_in_table_order() -> None:
    settings = HarnessSettings(server_target_qps=10.0, batch_size=4, backend="null")
    assert settings.set_fields() == ("backend", "batch_size", "server_target_qps")
    assert HarnessSettings().set_fields() == ()


def test_merged_over_takes_set_fields_from_self_and_the_rest_from_base() -> None:
    base = HarnessSettings(batch_size=8, backend="onnxruntime", min_duration_ms=1000)
    top = HarnessSettings(batch_size=64, precision="int8")
    merged = top.merged_over(base)
    assert merged == HarnessSettings(
        batch_size=64, backend="onnxruntime", min_duration_ms=1000, precision="int8"
    )
    assert HarnessSettings().merged_over(base) == base


def test_to_loadgen_settings_carries_only_loadgen_fields(tmp_path: Path) -> None:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text("")
    settings = HarnessSettings(
        batch_size=32,
        backend="null",
        min_duration_ms=10_000,
        server_target_qps=5000,
        server_batch_timeout_us=500,
    )
    loadgen = settings.to_loadgen_settings(
        "resnet50", Scenario.SERVER, TestMode.ACCURACY_ONLY, user_conf
    )
    assert loadgen == LoadgenSettings(
        model="resnet50",
        scenario=Scenario.SERVER,
        mode=TestMode.ACCURACY_ONLY,
        user_conf=user_conf,
        min_duration_ms=10_000,
        server_target_qps=5000.0,
    )


def test_to_loadgen_settings_refuses_a_field_the_scenario_ignores() -> None:
    settings = HarnessSettings(server_target_qps=5000)
    with pytest.raises(HarnessError, match="server_target_qps applies to Server only, not Offline"):
        settings.to_loadgen_settings("resnet50", Scenario.OFFLINE)
