"""Which CPUs a GPU's workers are pinned to (backends/torch_cuda/affinity.py), over a sysfs tree
laid out as Linux lays it out. `FakeTorch` stands in for torch's CUDA device properties only: no GPU
exists here."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlperf_harness.backends.torch_cuda import affinity


class FakeTorch:
    """torch.cuda.get_device_properties of two GPUs, on PCI buses 0x18 and 0x86."""

    def __init__(self) -> None:
        buses = {0: 0x18, 1: 0x86}
        self.cuda = SimpleNamespace(
            get_device_properties=lambda index: SimpleNamespace(
                pci_domain_id=0, pci_bus_id=buses[index], pci_device_id=0
            )
        )


def _sysfs(root: Path, nodes: int) -> Path:
    for node in range(nodes):
        (root / "devices" / "system" / "node" / f"node{node}").mkdir(parents=True)
    (root / "devices" / "system" / "node" / "possible").write_text("0-1\n")  # not a node
    for bus, node, cpus in (("0000:18:00.0", 0, "0-3,8-11"), ("0000:86:00.0", 1, "4-7,12-15")):
        device = root / "bus" / "pci" / "devices" / bus
        device.mkdir(parents=True)
        (device / "numa_node").write_text(f"{node}\n")
        (device / "local_cpulist").write_text(f"{cpus}\n")
    return root


def test_each_gpu_gets_its_own_nodes_cpus_on_a_two_node_host(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, nodes=2)
    torch = FakeTorch()
    assert affinity.numa_nodes(root) == 2
    assert affinity.gpu_bus_id(torch, 1) == "0000:86:00.0"
    assert affinity.cpus_near_gpu(torch, 0, root) == (0, 1, 2, 3, 8, 9, 10, 11)
    assert affinity.cpus_near_gpu(torch, 1, root) == (4, 5, 6, 7, 12, 13, 14, 15)


def test_nothing_is_pinned_on_one_node_or_when_unknown(tmp_path: Path) -> None:
    assert affinity.cpus_near_gpu(FakeTorch(), 0, _sysfs(tmp_path / "one", nodes=1)) == ()
    assert affinity.numa_nodes(tmp_path / "no_sysfs") == 1
    old_torch = SimpleNamespace(cuda=SimpleNamespace(get_device_properties=lambda i: object()))
    assert affinity.cpus_near_gpu(old_torch, 0, _sysfs(tmp_path / "two", nodes=2)) == ()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin to one")
def test_pinning_restricts_only_the_calling_thread(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, nodes=2)
    first_cpu = min(os.sched_getaffinity(0))
    local = root / "bus" / "pci" / "devices" / "0000:18:00.0" / "local_cpulist"
    local.write_text(f"{first_cpu}\n")
    before = os.sched_getaffinity(0)
    seen: list[set[int]] = []

    def worker() -> None:
        affinity.pin_thread_near_gpu(FakeTorch(), 0, root)
        seen.append(os.sched_getaffinity(0))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [{first_cpu}]
    assert os.sched_getaffinity(0) == before  # the main thread keeps every CPU
