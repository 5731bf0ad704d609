"""A submission's systems/<system>.json: every field MLCommons' checker requires, as text.

Values come from four places, later ones winning: what this module detects (CPU, memory, GPUs and
their links, OS, storage, network cards, software versions), the custom-system file's
"system_description" object (configs/systems/<name>.json), a user file of overrides (a JSON object
of field -> text), and the arguments (division, submitter, status, system type). What nothing can
tell (cooling, the memory's DIMM layout) is written as UNKNOWN, never empty: `unknown_fields` lists
those so that a real submission fills them in. Every value is a string: the checker counts an
integer 0 as an empty answer.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.rules import DIVISIONS, STATUSES, SYSTEM_TYPES
from mlperf_harness.systems.custom import load_custom_systems, parse_description_fields
from mlperf_harness.systems.detect import SystemInfo, detect_system

# MLCommons' SYSTEM_DESC_REQUIRED_FIELDS (v6.1), in its order: every one must be present.
REQUIRED_FIELDS: tuple[str, ...] = (
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
)
# SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS: these must not be empty.
MEANINGFUL_FIELDS: frozenset[str] = frozenset(
    {
        "division",
        "submitter",
        "system_type",
        "status",
        "system_name",
        "number_of_nodes",
        "host_processor_model_name",
        "host_processors_per_node",
        "host_processor_core_count",
        "host_memory_capacity",
        "host_memory_configuration",
        "host_storage_capacity",
        "host_storage_type",
        "host_networking",
        "host_network_card_count",
        "host_networking_topology",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_host_interconnect",
        "accelerator_memory_configuration",
        "accelerator_interconnect",
        "cooling",
        "framework",
        "operating_system",
        "other_software_stack",
    }
)
# The checker's results table multiplies these as integers.
INTEGER_FIELDS = ("number_of_nodes", "accelerators_per_node")
# Fields set by arguments: division and submitter must equal the tree's directory names.
ARGUMENT_FIELDS = ("division", "submitter", "status", "system_type")
# Optional fields submitters often add (the power and network groups of the checker); allowed in
# overrides so that a typo in a required field's name is still caught.
OPTIONAL_FIELDS: frozenset[str] = frozenset(
    {
        "power_management",
        "filesystem",
        "boot_firmware_version",
        "management_firmware_version",
        "other_hardware",
        "number_of_type_nics_installed",
        "nics_enabled_firmware",
        "nics_enabled_os",
        "nics_enabled_connected",
        "network_speed_mbit",
        "power_supply_quantity_and_rating_watts",
        "power_supply_details",
        "disk_drives",
        "disk_controllers",
        "system_power_only",
    }
)
# "is_network" (any value, even "false") makes the checker ask for 12 network fields; in the
# closed division it must be absent.
IS_NETWORK = "is_network"
NETWORK_FIELDS: frozenset[str] = frozenset(
    {
        IS_NETWORK,
        "network_type",
        "network_media",
        "network_rate",
        "nic_loadgen",
        "number_nic_loadgen",
        "net_software_stack_loadgen",
        "network_protocol",
        "number_connections",
        "nic_sut",
        "number_nic_sut",
        "net_software_stack_sut",
        "network_topology",
    }
)
UNKNOWN = "unknown"  # detection could not tell: set the field in the overrides
NOT_APPLICABLE = "N/A"  # e.g. accelerator fields of a machine without accelerators

_GB = 1000**3
_GIB = 1024**3


@dataclass(frozen=True)
class HostFacts:
    """What detection finds beyond SystemInfo: everything a system description needs from the host."""

    operating_system: str
    processors_per_node: int  # sockets
    cores_per_processor: int  # physical cores of one socket
    caches: str  # "L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB"; "" when unknown
    storage_capacity_bytes: int  # 0 when unknown
    storage_type: str  # "NVMe SSD", "SSD", "HDD", "virtual disk"; "" when unknown
    network_cards: tuple[str, ...]  # one entry per physical network interface: "Ethernet 25 Gb/s"
    gpu_host_interconnect: str  # "PCIe Gen5 x16"; "" when unknown or no GPU
    gpu_interconnect: str  # "18x NVLink 4"; "" when unknown or no GPU
    driver: str  # "NVIDIA driver 550.54.15 (CUDA 12.4)"; "" without an NVIDIA driver


def detect_host(info: SystemInfo, storage_path: Path = Path("/")) -> HostFacts:
    """The host's facts from /proc, /sys, /etc/os-release and NVML (each missing source: unknown)."""
    sockets, cores = _cpu_topology(info.cpu_cores)
    disks = _disks_for(storage_path)
    capacity = sum(_disk_bytes(disk) for disk in disks)
    if not capacity:
        try:
            stat = os.statvfs(storage_path)
            capacity = stat.f_blocks * stat.f_frsize
        except OSError:
            capacity = 0
    nvml = _nvml_facts() if info.gpus else _NvmlFacts()
    return HostFacts(
        operating_system=_operating_system(),
        processors_per_node=sockets,
        cores_per_processor=cores,
        caches=_cpu_caches(),
        storage_capacity_bytes=capacity,
        storage_type=", ".join(sorted({_disk_kind(disk) for disk in disks} - {""})),
        network_cards=_network_cards(),
        gpu_host_interconnect=nvml.host_interconnect,
        gpu_interconnect=nvml.interconnect,
        driver=nvml.driver,
    )


def framework_description(backends: Iterable[str]) -> str:
    """The inference frameworks behind `backends` with their installed versions, e.g.
    "ONNX Runtime 1.31.1". Read from package metadata, so nothing heavy is imported."""
    parts = []
    for backend in dict.fromkeys(backends):
        name, distributions = _BACKEND_FRAMEWORKS.get(backend, (backend, ()))
        if backend == "null":
            parts.append(name)
            continue
        version = _installed_version(*distributions)
        parts.append(f"{name} {version}" if version else name)
    if not parts:
        raise HarnessError("name the backend the results were measured with (framework)")
    return ", ".join(parts)


def software_stack(host: HostFacts) -> str:
    """other_software_stack: what runs the benchmark besides the framework."""
    parts = [f"Python {platform.python_version()}"]
    loadgen = _installed_version("mlcommons-loadgen", "mlcommons_loadgen")
    if loadgen:
        parts.append(f"MLPerf LoadGen {loadgen}")
    numpy_version = _installed_version("numpy")
    if numpy_version:
        parts.append(f"NumPy {numpy_version}")
    if host.driver:
        parts.append(host.driver)
    parts.append("mlperf_harness")
    return ", ".join(parts)


def system_description(
    system: str,
    *,
    info: SystemInfo,
    host: HostFacts,
    division: str,
    submitter: str,
    framework: str,
    status: str | None = None,
    system_type: str | None = None,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The systems/<system>.json object. `overrides` (from `description_overrides`) win over what
    was detected; `status` and `system_type` win over the overrides and must be given by one of
    them (status defaults to "available")."""
    overrides = overrides or {}
    check_overrides(overrides, division, "overrides")
    gpus = info.gpus
    gpu_name = gpus[0].name if gpus else ""
    described: dict[str, str] = {
        "division": division,
        "submitter": submitter,
        "status": "available",
        "system_name": _system_name(system, f"{len(gpus)}x {gpu_name}" if gpus else ""),
        "number_of_nodes": "1",
        "host_processor_model_name": info.cpu_model or UNKNOWN,
        "host_processors_per_node": str(host.processors_per_node),
        "host_processor_core_count": str(host.cores_per_processor),
        "host_memory_capacity": _size(info.memory_bytes, _GIB, "GiB") if info.memory_bytes else "",
        "host_storage_capacity": _storage_size(host.storage_capacity_bytes),
        "host_storage_type": host.storage_type,
        "accelerators_per_node": str(len(gpus)),
        "accelerator_model_name": gpu_name or NOT_APPLICABLE,
        "accelerator_memory_capacity": (
            _size(gpus[0].memory_bytes, _GIB, "GiB") if gpus else NOT_APPLICABLE
        ),
        "framework": framework,
        "operating_system": host.operating_system,
        "system_type": "",
        "other_software_stack": software_stack(host),
        "host_processor_frequency": "",
        "host_processor_caches": host.caches,
        "host_memory_configuration": "",
        "host_processor_interconnect": "",
        "host_networking": _networking(host.network_cards),
        "host_networking_topology": NOT_APPLICABLE + " (single node)",
        "accelerator_frequency": "",
        "accelerator_host_interconnect": (host.gpu_host_interconnect if gpus else NOT_APPLICABLE),
        "accelerator_interconnect": _gpu_interconnect(len(gpus), host.gpu_interconnect),
        "accelerator_interconnect_topology": "",
        "accelerator_memory_configuration": (
            _gpu_memory_type(gpu_name) if gpus else NOT_APPLICABLE
        ),
        "accelerator_on-chip_memories": "",
        "cooling": "",
        "hw_notes": "",
        "sw_notes": "",
        "host_network_card_count": str(len(host.network_cards)) if host.network_cards else "",
        "system_type_detail": "",
    }
    described.update(overrides)
    if status is not None:
        described["status"] = status
    if system_type is not None:
        described["system_type"] = system_type
    if not described["system_type"]:
        raise HarnessError(
            f"name the system type of {system} ({', '.join(SYSTEM_TYPES)}): a flag or the"
            " system description overrides"
        )
    for field in MEANINGFUL_FIELDS:
        if not described[field].strip():
            described[field] = UNKNOWN
    problems = description_problems(described, division=division, submitter=submitter)
    if problems:
        raise HarnessError(f"system description of {system}: {'; '.join(problems)}")
    return described


def describe_this_system(
    system: str,
    *,
    division: str,
    submitter: str,
    backends: Iterable[str],
    status: str | None = None,
    system_type: str | None = None,
    config_dir: Path | None = None,
    overrides_file: Path | None = None,
) -> dict[str, str]:
    """This machine's description: detection, then the custom-system file of `system` in
    `config_dir` (if any), then `overrides_file` (if given), then the arguments."""
    info = detect_system()
    return system_description(
        system,
        info=info,
        host=detect_host(info),
        division=division,
        submitter=submitter,
        framework=framework_description(backends),
        status=status,
        system_type=system_type,
        overrides=description_overrides(
            system, division=division, config_dir=config_dir, overrides_file=overrides_file
        ),
    )


def description_overrides(
    system: str,
    *,
    division: str,
    config_dir: Path | None = None,
    overrides_file: Path | None = None,
) -> dict[str, str]:
    """The custom-system file's "system_description" fields, then the overrides file's over them."""
    merged: dict[str, str] = {}
    if config_dir is not None:
        for custom in load_custom_systems(config_dir):
            if custom.name == system:
                merged.update(custom.system_description)
                check_overrides(merged, division, f"{custom.path}: system_description")
    if overrides_file is not None:
        from_file = load_overrides(overrides_file)
        check_overrides(from_file, division, str(overrides_file))
        merged.update(from_file)
    return merged


def load_overrides(path: Path) -> dict[str, str]:
    """A JSON file holding an object of system description field -> text."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise HarnessError(f"system description overrides not found: {path}") from None
    except json.JSONDecodeError as error:
        raise HarnessError(
            f"{path}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessError(f"{path}: cannot read: {error}") from None
    return dict(parse_description_fields(document, str(path)))


def check_overrides(overrides: Mapping[str, str], division: str, where: str) -> None:
    """Refuse field names the checker does not know (typos), and fields arguments must set."""
    for field in overrides:
        if field in ("division", "submitter"):
            raise HarnessError(
                f"{where}: {field} comes from the submission's directory names, not overrides"
            )
        if field in NETWORK_FIELDS:
            if division == "closed":
                raise HarnessError(
                    f"{where}: {field} is a network-division field; leave it out in closed"
                )
            continue
        if field not in REQUIRED_FIELDS and field not in OPTIONAL_FIELDS:
            raise HarnessError(f"{where}: unknown system description field {field!r}")


def description_problems(
    description: Mapping[str, object],
    *,
    division: str | None = None,
    submitter: str | None = None,
) -> list[str]:
    """One line per problem MLCommons' checker would report (a missing field, an empty meaningful
    one, a bad status or system type, is_network in closed, a division or submitter other than the
    directories'), plus values that are not text. Empty when the description is complete."""
    problems = []
    for field in REQUIRED_FIELDS:
        if field not in description:
            problems.append(f"field {field} is missing")
            continue
        value = description[field]
        if not isinstance(value, str):
            problems.append(f"field {field} must be text, got {value!r}")
        elif field in MEANINGFUL_FIELDS and not value.strip():
            problems.append(f"field {field} needs a meaningful value but is empty")
    for field in INTEGER_FIELDS:
        value = description.get(field)
        if isinstance(value, str) and value.strip() and not value.strip().isdigit():
            problems.append(f"field {field} must be a whole number, got {value!r}")
    status = description.get("status")
    if isinstance(status, str) and status.strip() and status.lower() not in STATUSES:
        problems.append(f"status {status!r} is not one of {', '.join(STATUSES)}")
    system_type = description.get("system_type")
    if isinstance(system_type, str) and system_type.strip() and system_type not in SYSTEM_TYPES:
        problems.append(f"system_type {system_type!r} is not one of {', '.join(SYSTEM_TYPES)}")
    described_division = description.get("division")
    if isinstance(described_division, str) and described_division.strip():
        if described_division not in DIVISIONS:
            problems.append(f"division {described_division!r} is not one of {', '.join(DIVISIONS)}")
        elif division is not None and described_division.lower() != division.lower():
            problems.append(f"division {described_division!r} but the tree's is {division!r}")
    described_submitter = description.get("submitter")
    if (
        submitter is not None
        and isinstance(described_submitter, str)
        and described_submitter.strip()
        and described_submitter.lower() != submitter.lower()
    ):
        problems.append(f"submitter {described_submitter!r} but the tree's is {submitter!r}")
    if (division or described_division) == "closed" and IS_NETWORK in description:
        problems.append(f"leave {IS_NETWORK} out in the closed division")
    return problems


def unknown_fields(description: Mapping[str, object]) -> list[str]:
    """Fields written as UNKNOWN: complete for the checker, but a real submission states them."""
    return [field for field in REQUIRED_FIELDS if description.get(field) == UNKNOWN]


# --- detection beyond systems.detect --------------------------------------------------------------

_BACKEND_FRAMEWORKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "null": ("none (the null backend: the harness without a model)", ()),
    "onnxruntime": ("ONNX Runtime", ("onnxruntime", "onnxruntime-gpu")),
    "tensorrt": ("TensorRT", ("tensorrt", "tensorrt-cu12", "tensorrt-cu13", "tensorrt-libs")),
    "torch": ("PyTorch", ("torch",)),
}

# HBM or GDDR by GPU product (NVML names it but not its memory type).
_GPU_MEMORY_TYPES: tuple[tuple[str, str], ...] = (
    ("HBM3e", "HBM3e"),
    ("HBM3", "HBM3"),
    ("H200", "HBM3e"),
    ("B200", "HBM3e"),
    ("H100 PCIe", "HBM2e"),
    ("H100 NVL", "HBM3"),
    ("A100", "HBM2e"),
    ("L40", "GDDR6"),
    ("L4", "GDDR6"),
    ("A10", "GDDR6"),
)


def _installed_version(*distributions: str) -> str:
    for distribution in distributions:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


def _system_name(system: str, gpus: str) -> str:
    """NVIDIA's style, "<system> (1x NVIDIA H100 80GB HBM3)": the product name is not readable
    without root, so our system id stands in; overrides may give the vendor's name."""
    return f"{system} ({gpus})" if gpus else system


def _size(count: int, unit: int, name: str) -> str:
    return f"{count / unit:.0f} {name}"


def _storage_size(count: int) -> str:
    if not count:
        return ""
    return f"{count / 1000**4:.1f} TB" if count >= 1000**4 else _size(count, _GB, "GB")


def _networking(cards: tuple[str, ...]) -> str:
    counts: dict[str, int] = {}
    for card in cards:
        counts[card] = counts.get(card, 0) + 1
    return ", ".join(f"{count}x {card}" for card, count in counts.items())


def _gpu_interconnect(gpu_count: int, detected: str) -> str:
    if gpu_count == 0:
        return NOT_APPLICABLE
    if detected:
        return detected
    return NOT_APPLICABLE + " (single accelerator)" if gpu_count == 1 else ""


def _gpu_memory_type(name: str) -> str:
    for marker, memory in _GPU_MEMORY_TYPES:
        if marker.casefold() in name.casefold():
            return memory
    return ""


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _operating_system() -> str:
    fields = {}
    for line in _read(Path("/etc/os-release")).splitlines():
        key, _, value = line.partition("=")
        fields[key.strip()] = value.strip().strip('"')
    name = fields.get("PRETTY_NAME") or f"{platform.system()}".strip()
    kernel = platform.release()
    return f"{name} (kernel {kernel})" if name and kernel else name


def _cpu_topology(logical_cpus: int) -> tuple[int, int]:
    """(sockets, physical cores per socket) from /proc/cpuinfo; (1, logical CPUs) without it."""
    sockets: set[str] = set()
    cores_per_socket = 0
    for line in _read(Path("/proc/cpuinfo")).splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            sockets.add(value.strip())
        elif key == "cpu cores" and value.strip().isdigit():
            cores_per_socket = int(value.strip())
    return max(len(sockets), 1), cores_per_socket or max(logical_cpus, 1)


def _cpu_caches() -> str:
    """CPU 0's caches from sysfs, e.g. "L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB"."""
    parts = []
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(root.glob("index*")):
        level, kind, size = (_read(index / name) for name in ("level", "type", "size"))
        if not level or not size:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        parts.append(f"L{level}{suffix} {_cache_size(size)}")
    return ", ".join(parts)


def _cache_size(size: str) -> str:
    match = re.fullmatch(r"(\d+)K", size)
    if match is None:
        return size
    kib = int(match.group(1))
    return f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib} KiB"


_VIRTUAL_DISKS = re.compile(r"(loop|ram|zram|dm-|md|sr|fd|nbd)\d*")


def _disks_for(path: Path) -> list[str]:
    """The disk holding `path`; every physical disk when that cannot be told (an overlay root)."""
    try:
        device = os.stat(path).st_dev
        node = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}").resolve(strict=True)
        disk = node.parent.name if (node / "partition").exists() else node.name
        if (Path("/sys/block") / disk).exists() and not _VIRTUAL_DISKS.fullmatch(disk):
            return [disk]
    except OSError:
        pass
    try:
        names = sorted(entry.name for entry in Path("/sys/block").iterdir())
    except OSError:
        return []
    return [name for name in names if not _VIRTUAL_DISKS.fullmatch(name)]


def _disk_bytes(disk: str) -> int:
    sectors = _read(Path("/sys/block") / disk / "size")
    return int(sectors) * 512 if sectors.isdigit() else 0  # sysfs counts 512-byte sectors


def _disk_kind(disk: str) -> str:
    if disk.startswith("nvme"):
        return "NVMe SSD"
    if re.fullmatch(r"x?vd[a-z]+", disk):
        return "virtual disk"
    rotational = _read(Path("/sys/block") / disk / "queue" / "rotational")
    return {"0": "SSD", "1": "HDD"}.get(rotational, "")


def _network_cards() -> tuple[str, ...]:
    """Physical network interfaces (those with a device behind them), e.g. "Ethernet 25 Gb/s"."""
    cards = []
    try:
        interfaces = sorted(Path("/sys/class/net").iterdir())
    except OSError:
        return ()
    for interface in interfaces:
        if not (interface / "device").exists():
            continue  # loopback, bridges, veth pairs
        kind = {"1": "Ethernet", "32": "InfiniBand"}.get(_read(interface / "type"), "network")
        speed = _read(interface / "speed")  # Mb/s; -1 or unreadable when the link is down
        if speed.isdigit() and int(speed) > 0:
            mbit = int(speed)
            rate = f"{mbit // 1000} Gb/s" if mbit >= 1000 else f"{mbit} Mb/s"
            cards.append(f"{kind} {rate}")
        else:
            cards.append(kind)
    return tuple(cards)


@dataclass(frozen=True)
class _NvmlFacts:
    host_interconnect: str = ""
    interconnect: str = ""
    driver: str = ""


_NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS


def _nvml_facts() -> _NvmlFacts:
    """GPU 0's PCIe link and NVLinks, and the driver, through NVML (as systems.detect reads it)."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return _NvmlFacts()
    if nvml.nvmlInit_v2() != 0:
        return _NvmlFacts()
    try:
        handle = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) != 0:
            return _NvmlFacts()
        generation, width = ctypes.c_uint(), ctypes.c_uint()
        pcie = ""
        if (
            nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle, ctypes.byref(generation)) == 0
            and nvml.nvmlDeviceGetMaxPcieLinkWidth(handle, ctypes.byref(width)) == 0
        ):
            pcie = f"PCIe Gen{generation.value} x{width.value}"
        links, version = 0, 0
        for link in range(_NVLINK_MAX_LINKS):
            active, link_version = ctypes.c_int(), ctypes.c_uint()
            if nvml.nvmlDeviceGetNvLinkState(handle, link, ctypes.byref(active)) != 0:
                continue  # no such link (or no NVLink at all)
            if active.value:
                links += 1
                if nvml.nvmlDeviceGetNvLinkVersion(handle, link, ctypes.byref(link_version)) == 0:
                    version = max(version, link_version.value)
        nvlink = f"{links}x NVLink {version}" if links and version else ""
        nvlink = nvlink or (f"{links}x NVLink" if links else "")
        text = ctypes.create_string_buffer(96)
        driver = ""
        if nvml.nvmlSystemGetDriverVersion(text, 96) == 0:
            driver = f"NVIDIA driver {text.value.decode(errors='replace')}"
            cuda = ctypes.c_int()
            if nvml.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(cuda)) == 0 and cuda.value:
                driver += f" (CUDA {cuda.value // 1000}.{cuda.value % 1000 // 10})"
        return _NvmlFacts(pcie, nvlink, driver)
    finally:
        nvml.nvmlShutdown()
