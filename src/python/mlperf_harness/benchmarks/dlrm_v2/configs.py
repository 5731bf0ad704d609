"""DLRM-v2's settings per scenario and system. Durations, the performance sample count (204,800)
and Server's 60 ms bound are LoadGen's mlperf.conf values for `dlrm-v2`; what is here is how a
system runs it. A sample is a user's group of pairs (about 270), and a batch counts samples: the
model's batch is all their pairs."""

from __future__ import annotations

from mlperf_harness.config.gpu import TorchOnGPU
from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "dlrm-v2"  # its name in mlperf.conf, for DLRM-v2-99 and DLRM-v2-99.9 alike


class DlrmV2(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    batch_size = 4  # samples: about 1,100 pairs per ONNX Runtime call
    worker_count = 1  # ONNX Runtime spreads one batch over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(DlrmV2):
    pass


@register(NAME, Scenario.SERVER)
class Server(DlrmV2):
    batch_size = 2
    server_batch_timeout_us = 2_000


# One H200 (141 GB): the torch backend's fp16 tables (52 GB at the real size) fit with room to
# spare, so each GPU holds a replica. Batches of 256 samples are about 69,000 pairs a model call.
# The rates are the target (40,000 samples/s) until a run on the GPU measures them.
GPU_SYSTEMS = ("H200-SXM-141GBx1",)

for _system in GPU_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineGPU(TorchOnGPU, Offline):
        batch_size = 256
        gpu_inference_streams = 2
        offline_expected_qps = 40_000.0

    @register(NAME, Scenario.SERVER, _system)
    class ServerGPU(TorchOnGPU, Server):
        batch_size = 128
        gpu_inference_streams = 2
        server_batch_timeout_us = 4_000
        server_target_qps = 36_000.0
