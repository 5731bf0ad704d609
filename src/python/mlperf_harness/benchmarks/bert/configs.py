"""BERT's settings per scenario and system. Durations, query counts and the Server latency bound
(130 ms) are left to LoadGen's mlperf.conf; what is here is how fast a system is and how it batches.
The defaults suit the CPU stand-in (6-20 ms per sequence for ONNX Runtime on a 2-core CPU)."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "bert"  # its name in mlperf.conf, for BERT-99 and BERT-99.9 alike


class Bert(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # ONNX Runtime spreads one batch over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(Bert):
    batch_size = 8
    # Above what the stand-in does on a quiet 2-core CPU (82-117 samples/s measured): LoadGen's one
    # Offline query must last the minimum duration, so a rate set too low makes the run INVALID.
    offline_expected_qps = 120.0


@register(NAME, Scenario.SERVER)
class Server(Bert):
    batch_size = 4
    server_batch_timeout_us = 10_000
    server_target_qps = 10.0


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(Bert):
    batch_size = 1
    # Below the stand-in's fastest (about 6 ms a sequence): LoadGen generates queries for the
    # minimum duration from this, and "runs out of generated queries" (an error) if it is too high.
    single_stream_expected_latency_ns = 5_000_000


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(Bert):
    batch_size = 8
    multi_stream_expected_latency_ns = 40_000_000  # 8 sequences; see SingleStream


# NVIDIA H100 and H200: the torch backend's fp16 encoder per sequence-length bucket, the samples in
# GPU memory. Offline batches are large so that each length bucket gets full chunks after sorting.
GPU_SYSTEMS = ("H100-SXM5-80GBx1", "H200-SXM-141GBx1")


class TorchOnGPU(Bert):
    backend = "torch"
    precision = "fp16"
    start_from_device = True


for _system in GPU_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineGPU(TorchOnGPU, Offline):
        batch_size = 1024
        gpu_inference_streams = 2  # one batch computes while the next is sorted and staged
        offline_expected_qps = 4_000.0

    @register(NAME, Scenario.SERVER, _system)
    class ServerGPU(TorchOnGPU, Server):
        batch_size = 64
        server_batch_timeout_us = 2_000
        gpu_inference_streams = 2
        server_target_qps = 3_000.0

    @register(NAME, Scenario.SINGLE_STREAM, _system)
    class SingleStreamGPU(TorchOnGPU, SingleStream):
        gpu_inference_streams = 1
        # Below the engine's batch-1 time: LoadGen must not run out of generated queries.
        single_stream_expected_latency_ns = 1_000_000

    @register(NAME, Scenario.MULTI_STREAM, _system)
    class MultiStreamGPU(TorchOnGPU, MultiStream):
        gpu_inference_streams = 1
        multi_stream_expected_latency_ns = 4_000_000
