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


# One or two H200s (141 GB each): the torch backend's fp16 tables (52 GB at the real size) fit one
# GPU beside the loaded samples (204,800 samples of about 270 pairs: about 50 GB of packed rows),
# so each GPU holds a replica. Batches of 256 samples are about 69,000 pairs a model call.
# The rates are measured with the pooling kernel (the default --embedding) and LoadGen's C++ path
# for Offline (docs/performance.md, 2026-11-30): one H200 Offline 36,889 samples/s VALID (100.2%
# of the runners alone), Server VALID at a target of 34,700 queries/s (p99 18.1 ms of the 60 ms
# bound, 93.9% of Offline; 36,430 was INVALID); two H200s Offline 73,504 VALID (1.99x one); their
# Server has not run, so it is timed at the start of a run (config/measured_rates.py).
# Each class that records a rate names its engine (fp16, the pooling kernel, torch's cross
# layers): a run that asks for another by flag times its own (config/measured_rates.py's ENGINE_FIELDS).
# Offline's one query holds hundreds of thousands of samples: LoadGen's C++ path makes no Python
# object of each (two H200s, 2026-11-30: 69,089 samples/s VALID through it against 65,452 through
# the binding, one after the other on the same host).
OFFLINE_LOADGEN_PATH = "native"
MEASURED_RATES = {
    "H200-SXM-141GBx1": {Scenario.OFFLINE: 36_889.0, Scenario.SERVER: 34_700.0},
    "H200-SXM-141GBx2": {Scenario.OFFLINE: 73_504.0},
}
REPLICATED_SYSTEMS = ("H200-SXM-141GBx1", "H200-SXM-141GBx2")

# H100s (80 GB): the tables and the loaded samples do not both fit one GPU, so two or more H100s
# share the tables, each holding a range of their rows. Not measured: their rates are timed at the
# start of a run.
SHARDED_SYSTEMS = ("H100-SXM-80GBx2", "H100-SXM-80GBx4", "H100-SXM-80GBx8")

for _system in REPLICATED_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineGPU(TorchOnGPU, Offline):
        batch_size = 256
        gpu_inference_streams = 2
        embedding_placement = "replicated"
        loadgen_path = OFFLINE_LOADGEN_PATH
        if _system in MEASURED_RATES:
            precision = "fp16"
            embedding = "kernel"
            cross = "torch"
            offline_expected_qps = MEASURED_RATES[_system][Scenario.OFFLINE]

    @register(NAME, Scenario.SERVER, _system)
    class ServerGPU(TorchOnGPU, Server):
        batch_size = 128
        gpu_inference_streams = 2
        embedding_placement = "replicated"
        server_batch_timeout_us = 4_000
        if Scenario.SERVER in MEASURED_RATES.get(_system, {}):
            precision = "fp16"
            embedding = "kernel"
            cross = "torch"
            server_target_qps = MEASURED_RATES[_system][Scenario.SERVER]


for _system in SHARDED_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineSharded(TorchOnGPU, Offline):
        batch_size = 256
        gpu_inference_streams = 1
        embedding_placement = "sharded"
        loadgen_path = OFFLINE_LOADGEN_PATH

    @register(NAME, Scenario.SERVER, _system)
    class ServerSharded(TorchOnGPU, Server):
        batch_size = 128
        gpu_inference_streams = 1
        embedding_placement = "sharded"
        server_batch_timeout_us = 4_000
