"""ResNet-50's settings per scenario and system. Durations and query counts are left to LoadGen's
mlperf.conf (the official values); what is here is how fast a system is and how it batches."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "resnet50"


class ResNet50(BenchmarkConfig):
    # The default that runs on any machine: ONNX Runtime on the CPU.
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # ONNX Runtime spreads one batch over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(ResNet50):
    batch_size = 8
    offline_expected_qps = 20.0


@register(NAME, Scenario.SERVER)
class Server(ResNet50):
    batch_size = 4
    server_batch_timeout_us = 10_000
    server_target_qps = 5.0


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(ResNet50):
    batch_size = 1
    single_stream_expected_latency_ns = 50_000_000


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(ResNet50):
    batch_size = 8
    multi_stream_expected_latency_ns = 400_000_000
