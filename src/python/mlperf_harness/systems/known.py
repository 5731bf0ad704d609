"""Systems the harness knows by name, and how each is recognised from a detected SystemInfo."""

from __future__ import annotations

from dataclasses import dataclass

from mlperf_harness.errors import HarnessError
from mlperf_harness.systems.detect import SystemInfo


@dataclass(frozen=True)
class SystemMatch:
    """What a machine must look like to be a given system."""

    gpu_count: int  # exact; 0 for a machine without GPUs
    # Every GPU's NVML name, exactly (case aside). NVML names are fixed per product, and a substring
    # would be ambiguous: "NVIDIA H200" is inside "NVIDIA H200 NVL", a different card.
    gpu_name: str = ""
    # A substring of the CPU model: the model string also carries clocks and steppings that vary
    # between machines of one type. "" matches any CPU.
    cpu_model: str = ""
    cpu_cores: int = 0  # exact logical core count; 0 matches any

    def __post_init__(self) -> None:
        if self.gpu_count < 0 or self.cpu_cores < 0:
            raise HarnessError(
                f"gpu_count and cpu_cores must not be negative, got {self.gpu_count}"
                f" and {self.cpu_cores}"
            )
        if bool(self.gpu_count) != bool(self.gpu_name):
            raise HarnessError(
                f"gpu_name must be given exactly when gpu_count > 0, got {self.gpu_name!r}"
                f" with gpu_count {self.gpu_count}"
            )

    def matches(self, info: SystemInfo) -> bool:
        if len(info.gpus) != self.gpu_count:
            return False
        wanted_gpu = self.gpu_name.casefold()
        if any(gpu.name.casefold() != wanted_gpu for gpu in info.gpus):
            return False
        if self.cpu_model.casefold() not in info.cpu_model.casefold():
            return False
        return self.cpu_cores in (0, info.cpu_cores)


@dataclass(frozen=True)
class KnownSystem:
    name: str  # NVIDIA's style: <accelerator>x<count>, or <cpu>_<cores>c for a CPU-only machine
    match: SystemMatch


_H100_SXM = "NVIDIA H100 80GB HBM3"
_H100_PCIE = "NVIDIA H100 PCIe"
_H200_SXM = "NVIDIA H200"

# NVIDIA's system ids as its submissions spell them (H100-SXM-80GBx8, H200-SXM-141GBx8).
KNOWN_SYSTEMS: tuple[KnownSystem, ...] = (
    KnownSystem("H100-SXM-80GBx1", SystemMatch(1, _H100_SXM)),
    KnownSystem("H100-SXM-80GBx2", SystemMatch(2, _H100_SXM)),  # the device tool's nvidia-h100-x2
    # Four of an eight-H100 host (scaling.sh runs each size on the first n GPUs) or a host of four.
    KnownSystem("H100-SXM-80GBx4", SystemMatch(4, _H100_SXM)),
    KnownSystem("H100-SXM-80GBx8", SystemMatch(8, _H100_SXM)),  # the device tool's nvidia-h100-x8
    KnownSystem("H100-PCIe-80GBx1", SystemMatch(1, _H100_PCIE)),
    KnownSystem("H200-SXM-141GBx1", SystemMatch(1, _H200_SXM)),
    KnownSystem("H200-SXM-141GBx2", SystemMatch(2, _H200_SXM)),
    KnownSystem("H200-SXM-141GBx4", SystemMatch(4, _H200_SXM)),
    KnownSystem("H200-SXM-141GBx8", SystemMatch(8, _H200_SXM)),
    # The 2-core development and CI machine (its /proc/cpuinfo says "Intel(R) Xeon(R) Processor").
    # It fits any 2-core Xeon, from a VM slice to a part twice as fast: a name for logs and
    # submissions that carries no rates (no config is registered for it; its runs time their
    # engine at start, config/measured_rates.py).
    KnownSystem("Intel-Xeon_2c", SystemMatch(0, cpu_model="Xeon", cpu_cores=2)),
)


def match_known_system(info: SystemInfo) -> str | None:
    """The name of the known system `info` describes, or None. The matches are exclusive (exact GPU
    names and counts), so at most one entry fits."""
    return next((known.name for known in KNOWN_SYSTEMS if known.match.matches(info)), None)
