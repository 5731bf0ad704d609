from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlperf_harness.cli.add_custom_system import main
from mlperf_harness.config.fields import HarnessSettings, applicable_settings
from mlperf_harness.config.registry import ANY_SYSTEM, BenchmarkConfig, ConfigKey, ConfigRegistry
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.systems.custom import (
    add_custom_system,
    load_custom_systems,
    match_custom_system,
    register_custom_systems,
    system_name,
)
from mlperf_harness.systems.detect import GpuInfo, SystemInfo
from mlperf_harness.systems.known import SystemMatch

GIB = 1 << 30
L40S_HOST = SystemInfo(
    cpu_model="AMD EPYC 7763 64-Core Processor",
    cpu_cores=128,
    memory_bytes=512 * GIB,
    gpus=(GpuInfo("NVIDIA L40S", 48 * GIB), GpuInfo("NVIDIA L40S", 48 * GIB)),
)
H100_HOST = SystemInfo(
    cpu_model="Intel(R) Xeon(R) Processor",
    cpu_cores=16,
    memory_bytes=128 * GIB,
    gpus=(GpuInfo("NVIDIA H100 80GB HBM3", 80 * GIB),),
)


def _registry_with_defaults() -> ConfigRegistry:
    """What the benchmarks' config modules register: the configs for any system."""
    registry = ConfigRegistry()

    class ResNet50(BenchmarkConfig):
        backend = "onnxruntime"
        precision = "int8"

    @registry.register("resnet50", Scenario.OFFLINE)
    class ResNet50Offline(ResNet50):
        batch_size = 32
        offline_expected_qps = 80.0

    @registry.register("resnet50", Scenario.SERVER)
    class ResNet50Server(ResNet50):
        batch_size = 4
        server_target_qps = 30.0

    return registry


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document, indent=2))


def test_round_trip_add_edit_load_resolve(tmp_path: Path) -> None:
    path = add_custom_system(L40S_HOST, None, tmp_path, ["resnet50"])
    assert path == tmp_path / "L40Sx2.json"

    document = _read(path)
    assert document["match"] == {
        "gpu_count": 2,
        "gpu_name": "NVIDIA L40S",
        "cpu_model": "AMD EPYC 7763 64-Core Processor",
        "cpu_cores": 128,
    }
    offline = document["settings"]["resnet50"]["Offline"]
    help_by_setting = offline.pop("_help")
    assert list(offline) == list(applicable_settings(Scenario.OFFLINE))
    assert set(offline.values()) == {None}
    assert set(help_by_setting) == set(offline)
    assert help_by_setting["precision"].startswith("fp32|fp16|bf16|int8|fp8: ")
    assert "server_target_qps" in document["settings"]["resnet50"]["Server"]
    assert set(document["settings"]["resnet50"]) == {scenario.value for scenario in Scenario}

    # The user fills in a few values; the rest stay null and inherit.
    document["settings"]["resnet50"]["Offline"]["batch_size"] = 256
    document["settings"]["resnet50"]["Offline"]["offline_expected_qps"] = 9000
    document["settings"]["resnet50"]["Server"]["server_batch_timeout_us"] = 0
    _write(path, document)

    systems = load_custom_systems(tmp_path)
    assert [system.name for system in systems] == ["L40Sx2"]
    registry = _registry_with_defaults()
    register_custom_systems(systems, registry)

    name = system_name(L40S_HOST, tmp_path)
    assert name == "L40Sx2"
    offline_resolved = registry.resolve("resnet50", Scenario.OFFLINE, name)
    assert offline_resolved.key == ConfigKey("resnet50", Scenario.OFFLINE, "L40Sx2")
    assert offline_resolved.settings == HarnessSettings(
        backend="onnxruntime", precision="int8", batch_size=256, offline_expected_qps=9000.0
    )
    assert offline_resolved.origin_of("batch_size") == str(path)
    assert str(offline_resolved.origin_of("backend")).endswith(".ResNet50")
    server_resolved = registry.resolve("resnet50", Scenario.SERVER, name)
    assert server_resolved.settings.server_batch_timeout_us == 0
    assert server_resolved.settings.batch_size == 4  # inherited
    # Scenarios left all null registered nothing: they resolve as for any system, or not at all.
    assert [key for key in registry.registered_keys() if key.system != ANY_SYSTEM] == [
        ConfigKey("resnet50", Scenario.OFFLINE, "L40Sx2"),
        ConfigKey("resnet50", Scenario.SERVER, "L40Sx2"),
    ]
    with pytest.raises(HarnessError, match="no config for resnet50/SingleStream"):
        registry.resolve("resnet50", Scenario.SINGLE_STREAM, name)


def test_add_refuses_to_overwrite(tmp_path: Path) -> None:
    path = add_custom_system(L40S_HOST, "MyBox", tmp_path, ["resnet50"])
    path.write_text('{"match": {"gpu_count": 0}, "settings": {}}')  # the user's edits
    with pytest.raises(HarnessError) as raised:
        add_custom_system(L40S_HOST, "MyBox", tmp_path, ["resnet50"])
    assert str(raised.value) == f"{path} already exists: edit it, or remove it to start over"
    assert path.read_text() == '{"match": {"gpu_count": 0}, "settings": {}}'


def test_add_refuses_a_machine_already_registered_under_another_name(tmp_path: Path) -> None:
    first = add_custom_system(L40S_HOST, "MyBox", tmp_path, ["resnet50"])
    with pytest.raises(HarnessError, match=f"already the custom system MyBox \\({first}\\)$"):
        add_custom_system(L40S_HOST, "MyOtherBox", tmp_path, ["resnet50"])
    assert not (tmp_path / "MyOtherBox.json").exists()


def test_known_machines_need_allow_known_and_a_name_of_their_own(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="known system H100-SXM-80GBx1, whose configs apply"):
        add_custom_system(H100_HOST, None, tmp_path, ["resnet50"])
    with pytest.raises(HarnessError, match="H100-SXM-80GBx1 is the name of a known system"):
        add_custom_system(H100_HOST, "H100-SXM-80GBx1", tmp_path, ["resnet50"], allow_known=True)
    assert system_name(H100_HOST, tmp_path) == "H100-SXM-80GBx1"
    add_custom_system(H100_HOST, "MyH100", tmp_path, ["resnet50"], allow_known=True)
    assert system_name(H100_HOST, tmp_path) == "MyH100"  # registered on purpose, so it wins


@pytest.mark.parametrize("name", ["my box", "../escape", "", "-dash-first"])
def test_add_refuses_names_that_are_not_file_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(HarnessError, match="must be letters, digits"):
        add_custom_system(L40S_HOST, name or " ", tmp_path, ["resnet50"])


def test_add_needs_a_benchmark(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="at least one benchmark"):
        add_custom_system(L40S_HOST, None, tmp_path, [])


def test_add_refuses_mixed_gpus(tmp_path: Path) -> None:
    mixed = SystemInfo("x", 4, GIB, (GpuInfo("NVIDIA L40S", GIB), GpuInfo("NVIDIA A10", GIB)))
    with pytest.raises(HarnessError, match="GPUs of different models"):
        add_custom_system(mixed, "Mixed", tmp_path, ["resnet50"])


def test_system_name_falls_back_to_the_default_name(tmp_path: Path) -> None:
    assert system_name(L40S_HOST, tmp_path / "missing") == "L40Sx2"
    assert load_custom_systems(tmp_path / "missing") == []


def test_two_custom_systems_matching_one_machine_are_ambiguous(tmp_path: Path) -> None:
    path = add_custom_system(L40S_HOST, "First", tmp_path, ["resnet50"])
    (tmp_path / "Second.json").write_text(path.read_text())
    with pytest.raises(HarnessError, match="matches several custom systems"):
        match_custom_system(L40S_HOST, load_custom_systems(tmp_path))


def test_malformed_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "Broken.json"
    path.write_text('{\n  "match": {"gpu_count": 0,}\n}\n')
    with pytest.raises(HarnessError) as raised:
        load_custom_systems(tmp_path)
    assert str(raised.value).startswith(f"{path}: not valid JSON: ")
    assert "line 2" in str(raised.value)


def _custom_file(tmp_path: Path, settings: Any, match: Any = None) -> Path:
    path = tmp_path / "MyBox.json"
    document = {"match": match or {"gpu_count": 0, "cpu_cores": 2}, "settings": settings}
    _write(path, document)
    return path


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (
            {"resnet50": {"Offline": {"batchsize": 8}}},
            "resnet50.Offline: unknown setting 'batchsize' (did you mean 'batch_size'?)",
        ),
        (
            {"resnet50": {"Offline": {"batch_size": "8"}}},
            "resnet50.Offline: batch_size must be int, got str '8'",
        ),
        (
            {"resnet50": {"Offline": {"batch_size": True}}},
            "resnet50.Offline: batch_size must be int, got bool True",
        ),
        (
            {"resnet50": {"Offline": {"precision": "int4"}}},
            "resnet50.Offline: precision must be one of fp32, fp16, bf16, int8, fp8, got 'int4'",
        ),
        (
            {"resnet50": {"Offline": {"server_target_qps": 10}}},
            "resnet50.Offline: server_target_qps applies to Server only, not Offline",
        ),
        (
            {"resnet50": {"offline": {}}},
            "resnet50: unknown scenario 'offline': choose one of Offline, Server, SingleStream,"
            " MultiStream, Interactive",
        ),
        ({"resnet50": {"Offline": [8]}}, "resnet50.Offline: expected a JSON object, got an array"),
        ({"resnet50": 8}, "resnet50: expected a JSON object, got a number"),
    ],
)
def test_bad_settings_name_the_file_and_key(tmp_path: Path, settings: Any, problem: str) -> None:
    path = _custom_file(tmp_path, settings)
    with pytest.raises(HarnessError) as raised:
        load_custom_systems(tmp_path)
    assert str(raised.value) == f"{path}: settings: {problem}"


@pytest.mark.parametrize(
    ("match", "problem"),
    [
        ({"gpu_count": 1}, "gpu_name must be given exactly when gpu_count > 0"),
        ({"gpu_count": "1"}, "gpu_count must be int, got '1'"),
        ({"gpu_count": 0, "cpu_cores": True}, "cpu_cores must be int, got True"),
        ({"gpu_count": 0, "gpus": 1}, "unknown key 'gpus'"),
        ({"cpu_cores": 2}, "gpu_count is required"),
    ],
)
def test_bad_match_names_the_file(tmp_path: Path, match: Any, problem: str) -> None:
    path = _custom_file(tmp_path, {}, match)
    with pytest.raises(HarnessError) as raised:
        load_custom_systems(tmp_path)
    assert str(raised.value).startswith(f"{path}: match: {problem}")


def test_bad_file_structure_is_named(tmp_path: Path) -> None:
    path = tmp_path / "MyBox.json"
    _write(path, {"match": {"gpu_count": 0}, "setting": {}})
    with pytest.raises(HarnessError, match="unknown key 'setting': expected match, settings"):
        load_custom_systems(tmp_path)
    _write(path, {"settings": {}})
    with pytest.raises(HarnessError, match="no 'match'"):
        load_custom_systems(tmp_path)
    _write(path, [1, 2])
    with pytest.raises(HarnessError, match="expected a JSON object"):
        load_custom_systems(tmp_path)


def test_values_for_a_benchmark_without_default_configs_are_refused_at_registration(
    tmp_path: Path,
) -> None:
    path = _custom_file(tmp_path, {"resnet5": {"Offline": {"batch_size": 8}}})
    systems = load_custom_systems(tmp_path)
    with pytest.raises(HarnessError) as raised:
        register_custom_systems(systems, _registry_with_defaults())
    assert str(raised.value) == (
        f"{path}: no config for resnet5/Offline to inherit from; registered benchmarks: resnet50"
    )


def test_custom_system_named_like_a_registered_system_class_is_a_duplicate(
    tmp_path: Path,
) -> None:
    registry = _registry_with_defaults()

    @registry.register("resnet50", Scenario.OFFLINE, system="MyBox")
    class ResNet50OfflineMyBox(BenchmarkConfig):
        batch_size = 1

    _custom_file(tmp_path, {"resnet50": {"Offline": {"batch_size": 8}}})
    with pytest.raises(HarnessError, match="already registered by ResNet50OfflineMyBox"):
        register_custom_systems(load_custom_systems(tmp_path), registry)


def test_match_written_for_this_host_matches_only_it(tmp_path: Path) -> None:
    add_custom_system(L40S_HOST, None, tmp_path, ["resnet50"])
    (system,) = load_custom_systems(tmp_path)
    assert system.match == SystemMatch(2, "NVIDIA L40S", "AMD EPYC 7763 64-Core Processor", 128)
    one_gpu = SystemInfo(L40S_HOST.cpu_model, 128, GIB, L40S_HOST.gpus[:1])
    assert match_custom_system(one_gpu, [system]) is None


def test_main_writes_a_stub_for_this_machine_and_refuses_a_second_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Real detection: --allow_known, so the test passes on known machines (the CI one is) too.
    argv = ["--config_dir", str(tmp_path), "--benchmark", "resnet50", "--benchmark", "bert"]
    argv += ["--name", "ThisMachine", "--allow_known"]
    assert main(argv) == 0
    path = tmp_path / "ThisMachine.json"
    assert set(_read(path)["settings"]) == {"resnet50", "bert"}
    assert f"wrote {path}" in capsys.readouterr().out
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert (
        error
        == f"add_custom_system: error: {path} already exists: edit it, or remove it to start over\n"
    )
