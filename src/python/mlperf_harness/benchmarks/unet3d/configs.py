"""3D-UNet's settings per scenario and system. Durations, query counts, the performance sample
count (every case stays loaded) and equal-issue mode are LoadGen's mlperf.conf values for
`3d-unet`; what is here is how fast a system is. A sample is a whole CT volume (several seconds of
CPU per volume for the stand-in), so every scenario runs one volume per call (batch size 1); the
model's batch is the volume's windows.

The defaults suit the CPU stand-in on a 2-core machine (0.5-3 s per volume)."""

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
    # Above the stand-in's fastest (0.7 volumes/s measured on a loaded 2-core EPYC): LoadGen's one
    # query must last the minimum duration, so a rate set too low makes the run INVALID.
    offline_expected_qps = 2.0


@register(NAME, Scenario.SERVER)
class Server(Unet3d):
    server_batch_timeout_us = 0
    server_target_qps = 0.2


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(Unet3d):
    # Below the stand-in's mean (p50 1.2 s, p90 2.6 s measured on a loaded 2-core EPYC): LoadGen
    # must not run out of generated queries before the minimum duration.
    single_stream_expected_latency_ns = 500_000_000


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(Unet3d):
    multi_stream_expected_latency_ns = 4_000_000_000  # 8 volumes a query


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
