"""Pin a GPU's worker threads to the CPUs of that GPU's NUMA node, on hosts with several nodes.

On a two-socket host a worker that gathers samples on the far socket's memory, or waits on a GPU
behind the other socket's PCIe root, pays the interconnect on every batch. The kernel says which
CPUs are near a PCI device (sysfs `local_cpulist`, read by systems/detect.pci_locality); torch says
which PCI device each CUDA index is. On a one-node host (the lent machines seen so far) nothing is
pinned: every CPU is as near as any other, and the scheduler balances better than a fixed mask.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mlperf_harness.systems.detect import pci_locality

SYS = Path("/sys")


def numa_nodes(sys_root: Path = SYS) -> int:
    """How many NUMA nodes the host has (1 where sysfs does not say)."""
    nodes = sys_root / "devices" / "system" / "node"
    try:
        return max(
            1, sum(1 for p in nodes.iterdir() if p.name[4:].isdigit() and p.name[:4] == "node")
        )
    except OSError:
        return 1


def gpu_bus_id(torch: Any, device_index: int) -> str | None:
    """sysfs' name of the PCI device behind CUDA index `device_index` (0000:18:00.0), if torch knows."""
    props = torch.cuda.get_device_properties(device_index)
    parts = [
        getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")
    ]
    if any(not isinstance(part, int) for part in parts):
        return None
    domain, bus, device = parts
    return f"{domain:04x}:{bus:02x}:{device:02x}.0"


def cpus_near_gpu(torch: Any, device_index: int, sys_root: Path = SYS) -> tuple[int, ...]:
    """The CPUs a worker of this GPU should run on; () where pinning would not help or is unknown."""
    if numa_nodes(sys_root) < 2:
        return ()
    bus_id = gpu_bus_id(torch, device_index)
    if bus_id is None:
        return ()
    return pci_locality(bus_id, sys_root)[1]


def pin_thread_near_gpu(torch: Any, device_index: int, sys_root: Path = SYS) -> tuple[int, ...]:
    """Restrict the calling thread to the GPU's local CPUs (Linux: pid 0 is the calling thread);
    returns them, () when nothing was pinned."""
    cpus = cpus_near_gpu(torch, device_index, sys_root)
    if cpus:
        os.sched_setaffinity(0, cpus)
    return cpus
