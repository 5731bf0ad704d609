"""RNN-T's settings per scenario and system. Durations, the performance sample count (2,513) and
Server's 1,000 ms bound are LoadGen's mlperf.conf values for `rnnt`; what is here is how a system
batches. The decoder's steps are the cost: larger batches share each step's calls among more
utterances. A run times its engine at start for the rates (config/measured_rates.py)."""

from __future__ import annotations

from mlperf_harness.config.gpu import TorchOnGPU
from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "rnnt"


class Rnnt(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # ONNX Runtime spreads each call over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(Rnnt):
    batch_size = 16
    # A batch decodes until its longest utterance is done: Offline's one query is sorted by
    # utterance length before it is cut into batches (batching.FixedBatches), so each batch's
    # utterances need about as many steps (--no-order_by_length: issue order).
    order_by_length = True


@register(NAME, Scenario.SERVER)
class Server(Rnnt):
    batch_size = 4
    server_batch_timeout_us = 20_000


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(Rnnt):
    batch_size = 1


# The GPU systems: the torch engine (torch_engine.py: fp16 cuDNN LSTM encoder, the whole batch's
# greedy decoding on the GPU under CUDA graphs), the loaded utterances in GPU memory (about 1.2 GB
# of fp32 features for dev-clean's 2,513, padded to the longest). No rate is written: none has been
# measured, so each run times its engine at start (config/measured_rates.py). A batch's decoding
# takes as many steps as its longest utterance's frames and symbols: larger batches share each
# step among more utterances.
GPU_SYSTEMS = tuple(f"H100-SXM-80GBx{n}" for n in (1, 2, 4, 8)) + tuple(
    f"H200-SXM-141GBx{n}" for n in (1, 2, 4, 8)
)

for _system in GPU_SYSTEMS:

    @register(NAME, Scenario.OFFLINE, _system)
    class OfflineGPU(TorchOnGPU, Offline):
        batch_size = 1024
        gpu_inference_streams = 2

    @register(NAME, Scenario.SERVER, _system)
    class ServerGPU(TorchOnGPU, Server):
        batch_size = 256
        server_batch_timeout_us = 50_000
        gpu_inference_streams = 2

    @register(NAME, Scenario.SINGLE_STREAM, _system)
    class SingleStreamGPU(TorchOnGPU, SingleStream):
        gpu_inference_streams = 1
