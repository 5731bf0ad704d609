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
