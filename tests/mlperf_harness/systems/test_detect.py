"""Detection's GPU locality (each GPU's NUMA node and CPUs read from sysfs by its PCI address), and
the GPUs CUDA_VISIBLE_DEVICES leaves a process."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.systems.detect import (
    GpuInfo,
    SystemInfo,
    detect_system,
    parse_cpu_list,
    pci_locality,
    visible_gpus,
)


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


H100 = "NVIDIA H100 80GB HBM3"
TWO = tuple(GpuInfo(H100, 80 << 30, uuid=f"GPU-{i}a2b3c4-{i}") for i in range(2))


def test_a_process_held_to_one_gpu_of_two_is_a_system_of_one() -> None:
    assert visible_gpus(TWO, None) == TWO  # unset: the host's GPUs
    assert visible_gpus(TWO, "1") == (TWO[1],)
    assert visible_gpus(TWO, "1,0") == (TWO[1], TWO[0])
    assert visible_gpus(TWO, "GPU-1a2b") == (TWO[1],)  # a UUID's unique prefix
    assert SystemInfo("x", 16, 1, visible_gpus(TWO, "0")).default_name == "H100-80GB-HBM3x1"


def test_cuda_stops_at_the_first_entry_it_cannot_use() -> None:
    assert visible_gpus(TWO, "") == ()
    assert visible_gpus(TWO, "-1") == ()
    assert visible_gpus(TWO, "0,7,1") == (TWO[0],)  # no GPU 7: GPU 1 is not reached
    assert visible_gpus(TWO, "0,0") == (TWO[0],)  # a GPU named twice
    assert visible_gpus(TWO, "GPU-") == ()  # a prefix of both: not unique
    assert visible_gpus(TWO, "MIG-9f1e") == TWO  # MIG instances: not mapped, the host's GPUs
