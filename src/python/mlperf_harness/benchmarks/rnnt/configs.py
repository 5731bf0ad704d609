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
# of fp32 features for dev-clean's 2,513, padded to the longest). One H200's Offline and Server
# rates are measured (docs/performance.md: Offline 18,345 samples/s VALID, the query in length
# order, four runners and LoadGen's C++ path; Server VALID at a target of 16,450 queries/s with
# four runners, p99 975 ms of the 1 s bound, where 16,779 was not); every other system and
# scenario times its engine at start (config/measured_rates.py), whose batches come in
# arrival order: about half the length-ordered rate, so an Offline run there ends early once and
# runs again at its own pace (docs/rates.md). A batch's decoding takes as many steps as
# its longest utterance's frames and symbols, and a step costs about as much at 1,024 rows as at
# one: larger batches, of like lengths, share each step among more utterances.
GPU_COUNTS = (1, 2, 4, 8)
GPU_SYSTEMS = tuple(f"H100-SXM-80GBx{n}" for n in GPU_COUNTS) + tuple(
    f"H200-SXM-141GBx{n}" for n in GPU_COUNTS
)
# Server on a GPU (docs/rnnt.md#servers-batches-by-length): Offline's batch, from one queue per
# length range (equal shares of the samples), each leaving full or after the timeout: a batch of
# like lengths wastes few of the decoder's steps, each shared by up to 1,024 utterances. At one
# H200's ~16,500 queries/s (90% of its Offline) ten queues fill ~580 each within the 350 ms
# timeout; the rest of the 1 s bound is the wait for a runner and the call (four runners share the
# GPU, each call about 2.7 times as long as alone). Chosen with a model of the H200's measured call
# times (server_model.py --runners 4 --raw 18782: 350 or 400 ms with ten queues 90% of the raw
# Offline rate within the bound, eight queues 87.5%, sixteen 70%), then on one H200 in one call
# (2026-11-30, docs/performance.md): Offline 18,001 samples/s; Server VALID at a target of 16,450
# (91.4% of it; p99 975 ms), INVALID at 16,779 (p99 1,012 ms). With 400 ms, VALID at 16,102 and
# INVALID at 16,600 (p99 1,018 ms); the earlier two runners, 550 ms and eight queues, VALID at
# 14,560 (p99 948 ms).
SERVER_GPU_TIMEOUT_US = 350_000
SERVER_BUCKETS_PER_GPU = 10
MEASURED_RATES = {"H200-SXM-141GBx1": {Scenario.OFFLINE: 18_345.0, Scenario.SERVER: 16_450.0}}
# Runners a GPU: a runner's call waits on the host between its decode graphs' replays (the check
# whether every row is done) and around the batch (upload, completion), and the GPU idles there
# unless another runner's call fills it. On one H200 (2026-11-29, one call), Offline: 2 runners
# 15,427 samples/s, 3 16,639, 4 18,182; LoadGen's C++ path adds 2% more (18,345 at 4: 97.2% of
# the runners alone on the same query, where 2 through the binding kept 93.5%). Server takes as
# many: with two it stayed VALID only up to 14,560 queries/s, 78% of that Offline.
STREAMS_PER_GPU = 4

for _count in GPU_COUNTS:
    for _system in (f"H100-SXM-80GBx{_count}", f"H200-SXM-141GBx{_count}"):

        @register(NAME, Scenario.OFFLINE, _system)
        class OfflineGPU(TorchOnGPU, Offline):
            batch_size = 1024
            gpu_inference_streams = STREAMS_PER_GPU
            loadgen_path = "native"  # no Python object per sample of its one large query
            if _system in MEASURED_RATES:
                offline_expected_qps = MEASURED_RATES[_system][Scenario.OFFLINE]

        @register(NAME, Scenario.SERVER, _system)
        class ServerGPU(TorchOnGPU, Server):
            batch_size = 1024  # Offline's: the same captured decode graphs
            server_batch_timeout_us = SERVER_GPU_TIMEOUT_US
            server_length_buckets = SERVER_BUCKETS_PER_GPU * _count
            gpu_inference_streams = STREAMS_PER_GPU
            if _system in MEASURED_RATES:
                server_target_qps = MEASURED_RATES[_system][Scenario.SERVER]

        @register(NAME, Scenario.SINGLE_STREAM, _system)
        class SingleStreamGPU(TorchOnGPU, SingleStream):
            gpu_inference_streams = 1
