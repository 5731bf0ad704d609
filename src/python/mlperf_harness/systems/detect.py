"""Describe this machine from /proc and, when an NVIDIA driver is present, NVML (through ctypes, so no
Python NVML package is needed and machines without a GPU need nothing)."""

from __future__ import annotations

import ctypes
import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GpuInfo:
    name: str
    memory_bytes: int
    # Where the GPU sits (NVML's PCI address, sysfs' spelling: 0000:18:00.0), the NUMA node it
    # hangs off (-1: unknown, or a machine of one node) and that node's CPUs, for pinning the
    # GPU's worker threads near it. Empty where NVML or /sys does not say.
    pci_bus_id: str = ""
    numa_node: int = -1
    local_cpus: tuple[int, ...] = ()
    uuid: str = ""  # NVML's GPU-... id, which CUDA_VISIBLE_DEVICES may name the GPU by


@dataclass(frozen=True)
class SystemInfo:
    cpu_model: str
    cpu_cores: int
    memory_bytes: int
    gpus: tuple[GpuInfo, ...]

    @property
    def default_name(self) -> str:
        """A file-name-safe id: NVIDIA's `<accelerator>x<count>` (`H100-80GB-HBM3x1`) or `<cpu>_<cores>c`."""
        if self.gpus:
            name = self.gpus[0].name.removeprefix("NVIDIA ").strip()
            return f"{_safe(name)}x{len(self.gpus)}"
        model = re.sub(r"\((R|TM|C)\)|\bCPU\b|\bProcessor\b|@.*$", " ", self.cpu_model)
        return f"{_safe(model)}_{self.cpu_cores}c"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """A kernel CPU list ("0-3,8,10-11") as the CPUs it names, ascending."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return tuple(sorted(cpus))


def pci_locality(bus_id: str, sys_root: Path = Path("/sys")) -> tuple[int, tuple[int, ...]]:
    """(NUMA node, its CPUs) of the PCI device at `bus_id`, from sysfs; (-1, ()) where unknown."""
    device = sys_root / "bus" / "pci" / "devices" / bus_id
    try:
        node = int((device / "numa_node").read_text().strip())
        cpus = parse_cpu_list((device / "local_cpulist").read_text())
    except (OSError, ValueError):
        return -1, ()
    return node, cpus


class _NvmlPciInfo(ctypes.Structure):  # nvmlPciInfo_t (nvml.h, the _v3 call)
    _fields_ = [
        ("bus_id_legacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pci_device_id", ctypes.c_uint),
        ("pci_subsystem_id", ctypes.c_uint),
        ("bus_id", ctypes.c_char * 32),
    ]


class _NvmlMemory(ctypes.Structure):
    _fields_ = [
        ("total", ctypes.c_ulonglong),
        ("free", ctypes.c_ulonglong),
        ("used", ctypes.c_ulonglong),
    ]


def _nvml_gpus() -> tuple[GpuInfo, ...]:
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return ()  # no NVIDIA driver: a CPU-only machine
    if nvml.nvmlInit_v2() != 0:
        return ()
    try:
        count = ctypes.c_uint()
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return ()
        gpus = []
        get_pci = getattr(nvml, "nvmlDeviceGetPciInfo_v3", None)  # drivers of CUDA 11 and later
        for i in range(count.value):
            handle = ctypes.c_void_p()
            nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle))
            name = ctypes.create_string_buffer(96)
            nvml.nvmlDeviceGetName(handle, name, 96)
            memory = _NvmlMemory()
            nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory))
            pci = _NvmlPciInfo()
            bus_id = ""
            if get_pci is not None and get_pci(handle, ctypes.byref(pci)) == 0:
                bus_id = f"{pci.domain:04x}:{pci.bus:02x}:{pci.device:02x}.0"
            node, cpus = pci_locality(bus_id) if bus_id else (-1, ())
            uuid = ctypes.create_string_buffer(96)
            nvml.nvmlDeviceGetUUID(handle, uuid, 96)
            gpus.append(
                GpuInfo(
                    name.value.decode(errors="replace"),
                    memory.total,
                    bus_id,
                    node,
                    cpus,
                    uuid.value.decode(errors="replace"),
                )
            )
        return tuple(gpus)
    finally:
        nvml.nvmlShutdown()


def visible_gpus(gpus: tuple[GpuInfo, ...], setting: str | None) -> tuple[GpuInfo, ...]:
    """The GPUs that CUDA_VISIBLE_DEVICES (`setting`) leaves this process. NVML lists every GPU of
    the host, but a process held to one GPU of two (one Triton server per GPU, docs/triton.md) is a
    system of one: it must take that system's configs (its samples in GPU memory), not the host's.
    Entries are indices or GPU UUIDs (or their unique prefixes), read as CUDA reads them: up to the
    first it would not accept. Unset: every GPU; MIG instances (not mapped here): every GPU."""
    if setting is None:
        return gpus
    chosen: list[GpuInfo] = []
    for entry in (part.strip() for part in setting.split(",")):
        if entry.startswith("MIG-"):
            return gpus
        if entry.isdigit():
            found = [gpus[int(entry)]] if int(entry) < len(gpus) else []
        elif entry.startswith("GPU-"):
            found = [gpu for gpu in gpus if gpu.uuid.startswith(entry)]
        else:
            found = []
        if len(found) != 1 or any(gpu is found[0] for gpu in chosen):
            break  # CUDA stops at an entry it cannot use
        chosen.append(found[0])
    return tuple(chosen)


def detect_system() -> SystemInfo:
    return SystemInfo(
        cpu_model=_cpu_model(),
        cpu_cores=os.cpu_count() or 1,
        memory_bytes=_memory_bytes(),
        gpus=visible_gpus(_nvml_gpus(), os.environ.get("CUDA_VISIBLE_DEVICES")),
    )
