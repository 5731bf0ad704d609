"""SDXL's settings per scenario and system. Durations, query counts, the performance sample count
(5,000) and Server's 20 s bound are LoadGen's mlperf.conf values for `stable-diffusion-xl`; what is
here is how each scenario batches. A sample is a whole 20-step generation (pipeline.py): a batch of
samples shares every UNet call. A run on a system no config times (every CPU) times its engine at
start for the rates (config/measured_rates.py)."""

from __future__ import annotations

from mlperf_harness.config.gpu import TorchOnGPU
from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "stable-diffusion-xl"  # its name in mlperf.conf and in a submission


class Sdxl(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # ONNX Runtime spreads each UNet call over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(Sdxl):
    batch_size = 8


@register(NAME, Scenario.SERVER)
class Server(Sdxl):
    batch_size = 1
    server_batch_timeout_us = 0


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(Sdxl):
    batch_size = 1


# One H100 or H200: the torch engine (gpu_pipeline.py), fp16. Offline batches 8 samples (16 UNet
# rows with guidance); Server waits up to a second to fill a batch of 4, a small part of its 20 s
# bound. One H200's rates are measured (docs/performance.md: the engine 1.237 samples/s, 1.240
# timed at a run's start; Server VALID at a target of 1.12, 1.08 scheduled, p99 10.9 s; a sample's
# work is the same with the real weights: fixed steps and shapes); every other system and scenario
# times its engine at start. Each class that records a rate names fp16 itself: the rates are the
# fp16 UNet's, and a run with `--precision fp8` (unet_fp8.py) is another engine, which times its own
# (config/measured_rates.py drops a rate only where the layer that gave it named the engine).
GPU_SYSTEMS = ("H100-SXM-80GBx1", "H200-SXM-141GBx1")
MEASURED_RATES = {"H200-SXM-141GBx1": {Scenario.OFFLINE: 1.24, Scenario.SERVER: 1.12}}

for _system in GPU_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineGPU(TorchOnGPU, Offline):
        precision = "fp16"
        batch_size = 8
        if _system in MEASURED_RATES:
            offline_expected_qps = MEASURED_RATES[_system][Scenario.OFFLINE]

    @register(NAME, Scenario.SERVER, _system)
    class ServerGPU(TorchOnGPU, Server):
        precision = "fp16"
        batch_size = 4
        server_batch_timeout_us = 1_000_000
        if _system in MEASURED_RATES:
            server_target_qps = MEASURED_RATES[_system][Scenario.SERVER]

    @register(NAME, Scenario.SINGLE_STREAM, _system)
    class SingleStreamGPU(TorchOnGPU, SingleStream):
        pass
