from __future__ import annotations

import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.systems.detect import GpuInfo, SystemInfo
from mlperf_harness.systems.known import KNOWN_SYSTEMS, SystemMatch, match_known_system

GIB = 1 << 30
# The CPU every lent GPU host and this development machine report.
XEON = "Intel(R) Xeon(R) Processor"


def _gpu_host(gpu_name: str, count: int, memory_gib: int = 80, cores: int = 16) -> SystemInfo:
    gpus = tuple(GpuInfo(gpu_name, memory_gib * GIB) for _ in range(count))
    return SystemInfo(cpu_model=XEON, cpu_cores=cores, memory_bytes=128 * GIB, gpus=gpus)


def _cpu_host(cpu_model: str, cores: int) -> SystemInfo:
    return SystemInfo(cpu_model=cpu_model, cpu_cores=cores, memory_bytes=24 * GIB, gpus=())


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        # NVML names as the lent H100 and H200 hosts report them.
        (_gpu_host("NVIDIA H100 80GB HBM3", 1), "H100-SXM-80GBx1"),
        (_gpu_host("NVIDIA H100 80GB HBM3", 2), "H100-SXM-80GBx2"),
        (_gpu_host("NVIDIA H100 80GB HBM3", 4), "H100-SXM-80GBx4"),
        (_gpu_host("NVIDIA H100 80GB HBM3", 8), "H100-SXM-80GBx8"),
        (_gpu_host("NVIDIA H100 PCIe", 1), "H100-PCIe-80GBx1"),
        (_gpu_host("NVIDIA H200", 1, memory_gib=140), "H200-SXM-141GBx1"),
        (_gpu_host("NVIDIA H200", 2, memory_gib=140), "H200-SXM-141GBx2"),
        (_gpu_host("NVIDIA H200", 8, memory_gib=140), "H200-SXM-141GBx8"),
        (_gpu_host("nvidia h100 80gb hbm3", 1), "H100-SXM-80GBx1"),  # case aside
        # A GPU entry leaves the CPU open: the GPUs decide, not the 2-core Xeon beside them.
        (_gpu_host("NVIDIA H100 80GB HBM3", 1, cores=2), "H100-SXM-80GBx1"),
        (_cpu_host(XEON, 2), "Intel-Xeon_2c"),
        (_cpu_host("Intel(R) Xeon(R) Platinum 8480C @ 2.0GHz", 2), "Intel-Xeon_2c"),
    ],
)
def test_known_hosts_are_recognised(info: SystemInfo, expected: str) -> None:
    assert match_known_system(info) == expected


@pytest.mark.parametrize(
    "info",
    [
        _gpu_host("NVIDIA H100 80GB HBM3", 3),  # no x3 entry: counts are exact
        _gpu_host("NVIDIA H200 NVL", 1, memory_gib=140),  # contains "NVIDIA H200", another card
        _gpu_host("NVIDIA L40S", 1, memory_gib=48),
        _cpu_host(XEON, 16),  # a Xeon, but not the 2-core machine
        _cpu_host("AMD EPYC 7763 64-Core Processor", 2),
        SystemInfo(
            XEON,
            16,
            128 * GIB,
            (GpuInfo("NVIDIA H100 80GB HBM3", 80 * GIB), GpuInfo("NVIDIA H100 PCIe", 80 * GIB)),
        ),
    ],
)
def test_other_hosts_are_not_known(info: SystemInfo) -> None:
    assert match_known_system(info) is None


def test_known_names_are_unique_and_each_entry_matches_one_system() -> None:
    names = [known.name for known in KNOWN_SYSTEMS]
    assert len(names) == len(set(names))
    matches = [known.match for known in KNOWN_SYSTEMS]
    assert len(matches) == len(set(matches))


def test_unknown_host_falls_back_to_its_default_name() -> None:
    info = _gpu_host("NVIDIA L40S", 1, memory_gib=48)
    assert match_known_system(info) is None
    assert info.default_name == "L40Sx1"


def test_match_checks_its_own_consistency() -> None:
    with pytest.raises(HarnessError, match="gpu_name must be given exactly when gpu_count > 0"):
        SystemMatch(1)
    with pytest.raises(HarnessError, match="gpu_name must be given exactly when gpu_count > 0"):
        SystemMatch(0, gpu_name="NVIDIA H100 PCIe")
    with pytest.raises(HarnessError, match="must not be negative"):
        SystemMatch(0, cpu_cores=-1)


def test_empty_cpu_fields_match_any_cpu() -> None:
    match = SystemMatch(1, "NVIDIA H100 PCIe")
    assert match.matches(_gpu_host("NVIDIA H100 PCIe", 1, cores=4))
    assert match.matches(
        SystemInfo("AMD EPYC 9654", 192, GIB, (GpuInfo("NVIDIA H100 PCIe", 80 * GIB),))
    )
