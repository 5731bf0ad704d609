"""Runners per device, shared by the backends that make several runners on each of several devices
(torch's GPUs, the sim backend's simulated ones)."""

from __future__ import annotations

from collections.abc import Callable

from mlperf_harness.backends.base import Runner


def spread_over_devices(
    devices: int, streams_per_device: int, make: Callable[[int], Runner]
) -> list[Runner]:
    """`make(device)` `streams_per_device` times for every device, in the order device 0, 1, ...
    for each stream in turn, so that the first workers to start sit on different devices. Each
    runner records its device (Runner.device_index)."""
    runners = []
    for _stream in range(streams_per_device):
        for device in range(devices):
            runner = make(device)
            runner.device_index = device
            runners.append(runner)
    return runners
