"""Detection's GPU locality: each GPU's NUMA node and CPUs read from sysfs by its PCI address."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.systems.detect import detect_system, parse_cpu_list, pci_locality


def test_cpu_lists_as_the_kernel_writes_them() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpu_list("5") == (5,)
    assert parse_cpu_list("") == ()


def test_a_gpus_numa_node_and_cpus_from_sysfs(tmp_path: Path) -> None:
    device = tmp_path / "bus" / "pci" / "devices" / "0000:18:00.0"
    device.mkdir(parents=True)
    (device / "numa_node").write_text("1\n")
    (device / "local_cpulist").write_text("16-31,48-63\n")
    node, cpus = pci_locality("0000:18:00.0", tmp_path)
    assert node == 1 and cpus == (*range(16, 32), *range(48, 64))
    assert pci_locality("0000:99:00.0", tmp_path) == (-1, ())  # no such device: unknown


def test_this_machine_detects_without_a_driver() -> None:
    info = detect_system()  # no NVIDIA driver here: no GPUs, and nothing fails
    assert all(gpu.pci_bus_id or gpu.numa_node == -1 for gpu in info.gpus)
