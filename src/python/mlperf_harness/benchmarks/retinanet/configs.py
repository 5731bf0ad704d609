"""RetinaNet's settings per scenario. Durations, query counts, the performance sample count (64)
and Server's 100 ms bound are LoadGen's mlperf.conf values for `retinanet`; what is here is how
each scenario batches. A run times its engine at start for the rates (config/measured_rates.py):
no system's rates have been measured for this benchmark yet."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "retinanet"


class RetinaNet(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # ONNX Runtime spreads one batch over every core itself


@register(NAME, Scenario.OFFLINE)
class Offline(RetinaNet):
    batch_size = 2


@register(NAME, Scenario.SERVER)
class Server(RetinaNet):
    batch_size = 1
    server_batch_timeout_us = 0


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(RetinaNet):
    batch_size = 1


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(RetinaNet):
    batch_size = 8  # mlperf.conf: eight samples a query
