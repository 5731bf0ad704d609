"""systems/<system>.json: complete for MLCommons' v6.1 checker, from detection, overrides and flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.system_description import (
    MEANINGFUL_FIELDS,
    NOT_APPLICABLE,
    REQUIRED_FIELDS,
    HostFacts,
    describe_this_system,
    description_overrides,
    description_problems,
    detect_host,
    framework_description,
    load_overrides,
    system_description,
    unknown_fields,
)
from mlperf_harness.systems.custom import add_custom_system, load_custom_systems
from mlperf_harness.systems.detect import GpuInfo, SystemInfo, detect_system

GIB = 1 << 30
H100_HOST = SystemInfo(
    cpu_model="Intel(R) Xeon(R) Platinum 8480C",
    cpu_cores=224,
    memory_bytes=2048 * GIB,
    gpus=tuple(GpuInfo("NVIDIA H100 80GB HBM3", 80 * GIB) for _ in range(8)),
)
H100_FACTS = HostFacts(
    operating_system="Ubuntu 22.04.4 LTS (kernel 5.15.0)",
    processors_per_node=2,
    cores_per_processor=56,
    caches="L1d 48 KiB, L1i 32 KiB, L2 2 MiB, L3 105 MiB",
    storage_capacity_bytes=30 * 1000**4,
    storage_type="NVMe SSD",
    network_cards=("InfiniBand 400 Gb/s",) * 8 + ("Ethernet 100 Gb/s",),
    gpu_host_interconnect="PCIe Gen5 x16",
    gpu_interconnect="18x NVLink 4",
    driver="NVIDIA driver 550.54.15 (CUDA 12.4)",
)
CPU_HOST = SystemInfo(cpu_model="AMD EPYC 7763", cpu_cores=2, memory_bytes=24 * GIB, gpus=())
CPU_FACTS = HostFacts(
    operating_system="Debian GNU/Linux 12 (bookworm)",
    processors_per_node=1,
    cores_per_processor=2,
    caches="",
    storage_capacity_bytes=0,
    storage_type="",
    network_cards=(),
    gpu_host_interconnect="",
    gpu_interconnect="",
    driver="",
)


def _describe(info: SystemInfo = H100_HOST, host: HostFacts = H100_FACTS, **kwargs: Any) -> Any:
    arguments: dict[str, Any] = {
        "division": "closed",
        "submitter": "Acme",
        "framework": "PyTorch 2.5.0",
        "system_type": "datacenter,edge",
    }
    arguments.update(kwargs)
    return system_description("H100-SXM-80GBx8", info=info, host=host, **arguments)


def _assert_complete(description: dict[str, Any]) -> None:
    assert set(REQUIRED_FIELDS) <= set(description)
    assert all(isinstance(value, str) for value in description.values())
    assert all(description[field].strip() for field in MEANINGFUL_FIELDS)
    assert "is_network" not in description
    assert description_problems(description, division="closed", submitter="Acme") == []


def test_required_fields_are_the_checkers() -> None:
    assert len(REQUIRED_FIELDS) == len(set(REQUIRED_FIELDS)) == 35
    assert len(MEANINGFUL_FIELDS) == 26
    assert set(MEANINGFUL_FIELDS) <= set(REQUIRED_FIELDS)


def test_gpu_system_is_complete_and_all_text() -> None:
    description = _describe()
    _assert_complete(description)
    assert description["division"] == "closed"
    assert description["submitter"] == "Acme"
    assert description["status"] == "available"
    assert description["system_type"] == "datacenter,edge"
    assert description["number_of_nodes"] == "1"
    assert description["accelerators_per_node"] == "8"
    assert description["accelerator_model_name"] == "NVIDIA H100 80GB HBM3"
    assert description["accelerator_memory_capacity"] == "80 GiB"
    assert description["accelerator_memory_configuration"] == "HBM3"
    assert description["accelerator_host_interconnect"] == "PCIe Gen5 x16"
    assert description["accelerator_interconnect"] == "18x NVLink 4"
    assert description["host_processors_per_node"] == "2"
    assert description["host_processor_core_count"] == "56"
    assert description["host_memory_capacity"] == "2048 GiB"
    assert description["host_storage_capacity"] == "30.0 TB"
    assert description["host_networking"] == "8x InfiniBand 400 Gb/s, 1x Ethernet 100 Gb/s"
    assert description["host_network_card_count"] == "9"
    assert description["framework"] == "PyTorch 2.5.0"
    assert "NVIDIA driver 550.54.15" in description["other_software_stack"]
    assert description["system_name"] == "H100-SXM-80GBx8 (8x NVIDIA H100 80GB HBM3)"
    # What no detection can tell is said to be unknown, never left empty.
    assert unknown_fields(description) == ["host_memory_configuration", "cooling"]


def test_cpu_only_system_says_not_applicable_for_accelerators() -> None:
    description = _describe(CPU_HOST, CPU_FACTS, system_type="edge")
    _assert_complete(description)
    assert description["accelerators_per_node"] == "0"  # text: the checker counts 0 as empty
    for field in (
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_host_interconnect",
        "accelerator_interconnect",
        "accelerator_memory_configuration",
    ):
        assert description[field] == NOT_APPLICABLE
    assert set(unknown_fields(description)) == {
        "host_storage_capacity",
        "host_storage_type",
        "host_memory_configuration",
        "host_networking",
        "host_network_card_count",
        "cooling",
    }


def test_this_machine_is_described_completely(tmp_path: Path) -> None:
    description = describe_this_system(
        "testbox",
        division="closed",
        submitter="Acme",
        backends=["onnxruntime"],
        system_type="edge",
        config_dir=tmp_path / "none",
    )
    _assert_complete(description)
    # With its version where the package's metadata is installed (not in every test sandbox).
    assert description["framework"].startswith("ONNX Runtime")
    assert description["other_software_stack"].startswith("Python 3.")
    host = detect_host(detect_system())
    assert host.operating_system
    assert host.processors_per_node >= 1 and host.cores_per_processor >= 1


def test_framework_names_each_backend_once() -> None:
    assert framework_description(["onnxruntime", "onnxruntime"]).count("ONNX Runtime") == 1
    assert framework_description(["null"]).startswith("none")
    with pytest.raises(HarnessError, match="name the backend"):
        framework_description([])


def test_overrides_win_over_detection_and_arguments_over_overrides() -> None:
    description = _describe(
        overrides={
            "cooling": "liquid",
            "host_memory_configuration": "32x 64 GB DDR5",
            "system_name": "Acme Box 9000",
            "status": "preview",
            "accelerators_per_node": "8",
            "hw_notes": "",
        },
        status="rdi",
    )
    _assert_complete(description)
    assert description["cooling"] == "liquid"
    assert description["system_name"] == "Acme Box 9000"
    assert description["status"] == "rdi"
    assert unknown_fields(description) == []


def test_system_type_from_overrides_when_no_flag() -> None:
    description = _describe(system_type=None, overrides={"system_type": "edge"})
    assert description["system_type"] == "edge"
    with pytest.raises(HarnessError, match="name the system type of H100-SXM-80GBx8"):
        _describe(system_type=None)


@pytest.mark.parametrize(
    ("overrides", "kwargs", "message"),
    [
        ({"coolling": "air"}, {}, "unknown system description field 'coolling'"),
        ({"submitter": "Other"}, {}, "submitter comes from the submission's directory names"),
        ({"is_network": "false"}, {}, "is_network is a network-division field"),
        ({}, {"status": "soon"}, "status 'soon' is not one of available, preview, rdi"),
        ({}, {"system_type": "datacenter, edge"}, "system_type 'datacenter, edge' is not one"),
        ({"number_of_nodes": "one"}, {}, "number_of_nodes must be a whole number"),
        ({}, {"division": "secret"}, "division 'secret' is not one of closed, open"),
    ],
)
def test_bad_values_are_refused(
    overrides: dict[str, str], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(HarnessError, match=message) as raised:
        _describe(overrides=overrides, **kwargs)
    assert "\n" not in str(raised.value)


def test_network_fields_are_allowed_in_open() -> None:
    description = _describe(division="open", overrides={"is_network": "false"})
    assert description["is_network"] == "false"
    assert description_problems(description, division="open") == []


def test_problems_name_each_missing_empty_or_non_text_field() -> None:
    description: dict[str, object] = dict(_describe())
    del description["cooling"]
    description["accelerators_per_node"] = 0
    description["host_networking"] = " "
    description["hw_notes"] = ""  # may be empty
    description["is_network"] = "false"
    problems = description_problems(description, division="closed", submitter="Other")
    assert problems == [
        "field accelerators_per_node must be text, got 0",
        "field host_networking needs a meaningful value but is empty",
        "field cooling is missing",
        "submitter 'Acme' but the tree's is 'Other'",
        "leave is_network out in the closed division",
    ]


def test_overrides_file_and_custom_system_file(tmp_path: Path) -> None:
    config_dir = tmp_path / "systems"
    path = add_custom_system(CPU_HOST, "cpubox", config_dir, ["resnet50"])
    document = json.loads(path.read_text())
    document["system_description"] = {
        "_help": "fields of systems/<name>.json that detection cannot know",
        "cooling": "air",
        "host_memory_configuration": "2x 12 GB DDR4",
        "host_processors_per_node": 1,  # a number becomes text
        "hw_notes": None,  # null: not set
    }
    path.write_text(json.dumps(document))
    [custom] = load_custom_systems(config_dir)
    assert dict(custom.system_description) == {
        "cooling": "air",
        "host_memory_configuration": "2x 12 GB DDR4",
        "host_processors_per_node": "1",
    }
    overrides_file = tmp_path / "overrides.json"
    overrides_file.write_text(json.dumps({"cooling": "liquid", "host_storage_type": "NVMe SSD"}))
    merged = description_overrides(
        "cpubox", division="closed", config_dir=config_dir, overrides_file=overrides_file
    )
    assert merged == {
        "cooling": "liquid",  # the file named on the command line wins
        "host_memory_configuration": "2x 12 GB DDR4",
        "host_processors_per_node": "1",
        "host_storage_type": "NVMe SSD",
    }
    # Another system's file does not apply.
    assert description_overrides("otherbox", division="closed", config_dir=config_dir) == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "expected a JSON object of field -> text"),
        ('{"cooling": true}', "cooling must be text, got True"),
        ('{"cooling": ', "not valid JSON"),
    ],
)
def test_bad_overrides_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "overrides.json"
    path.write_text(content)
    with pytest.raises(HarnessError, match=message):
        load_overrides(path)
    with pytest.raises(HarnessError, match="overrides not found"):
        load_overrides(tmp_path / "missing.json")


def test_bad_system_description_in_custom_file(tmp_path: Path) -> None:
    path = add_custom_system(CPU_HOST, "cpubox", tmp_path, ["resnet50"])
    document = json.loads(path.read_text())
    document["system_description"] = {"cooling": ["air"]}
    path.write_text(json.dumps(document))
    with pytest.raises(HarnessError, match=r"cpubox.json: system_description: cooling must be"):
        load_custom_systems(tmp_path)
    document["system_description"] = {"coolling": "air"}
    path.write_text(json.dumps(document))
    with pytest.raises(HarnessError, match="unknown system description field 'coolling'"):
        description_overrides("cpubox", division="closed", config_dir=tmp_path)
