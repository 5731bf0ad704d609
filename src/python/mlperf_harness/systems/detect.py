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
        for i in range(count.value):
            handle = ctypes.c_void_p()
            nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle))
            name = ctypes.create_string_buffer(96)
            nvml.nvmlDeviceGetName(handle, name, 96)
            memory = _NvmlMemory()
            nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory))
            gpus.append(GpuInfo(name.value.decode(errors="replace"), memory.total))
        return tuple(gpus)
    finally:
        nvml.nvmlShutdown()


def detect_system() -> SystemInfo:
    return SystemInfo(
        cpu_model=_cpu_model(),
        cpu_cores=os.cpu_count() or 1,
        memory_bytes=_memory_bytes(),
        gpus=_nvml_gpus(),
    )
