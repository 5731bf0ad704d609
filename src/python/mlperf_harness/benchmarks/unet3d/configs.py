"""3D-UNet's settings per scenario and system. Durations, query counts, the performance sample
count (every case stays loaded) and equal-issue mode are LoadGen's mlperf.conf values for
`3d-unet`; what is here is how fast a system is where that was measured on it (a run on any other
system, every CPU, times its engine at start: config/measured_rates.py). A sample is a whole CT
volume (seconds of CPU per volume for the stand-in), so every scenario runs one volume per call
(batch size 1); the model's batch is the volume's windows."""

from __future__ import annotations

from mlperf_harness.config.gpu import TorchOnGPU
from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "3d-unet"  # its name in mlperf.conf, for 3D-UNet-99 and 3D-UNet-99.9 alike


class Unet3d(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    batch_size = 1  # volumes of different shapes never share a batch (harness/volume_store.py)
    worker_count = 1  # ONNX Runtime spreads one window batch over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(Unet3d):
    pass


@register(NAME, Scenario.SERVER)
class Server(Unet3d):
    server_batch_timeout_us = 0


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(Unet3d):
    pass


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(Unet3d):
    pass


# One NVIDIA H200: the torch backend's fp16 engines, the volumes in GPU memory. From the first run
# there on the real-width stand-in (docs/performance.md, 2026-11-23): Offline 45.9 volumes/s of 2.3
# windows each, SingleStream p50 23.7 ms; the expected values sit above (Offline) and below
# (SingleStream) what was measured, so that LoadGen generates enough.
GPU_SYSTEMS = ("H200-SXM-141GBx1",)


for _system in GPU_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineGPU(TorchOnGPU, Offline):
        gpu_inference_streams = 2  # one volume's windows compute while the next is staged
        offline_expected_qps = 80.0

    @register(NAME, Scenario.SERVER, _system)
    class ServerGPU(TorchOnGPU, Server):
        gpu_inference_streams = 2
        server_target_qps = 30.0

    @register(NAME, Scenario.SINGLE_STREAM, _system)
    class SingleStreamGPU(TorchOnGPU, SingleStream):
        gpu_inference_streams = 1
        single_stream_expected_latency_ns = 5_000_000

    @register(NAME, Scenario.MULTI_STREAM, _system)
    class MultiStreamGPU(TorchOnGPU, MultiStream):
        gpu_inference_streams = 1
        multi_stream_expected_latency_ns = 40_000_000
