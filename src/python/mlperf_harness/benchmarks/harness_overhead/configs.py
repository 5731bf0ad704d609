"""harness_overhead's settings per scenario (and system, where one needs its own)."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "harness_overhead"


class HarnessOverhead(BenchmarkConfig):
    backend = "null"
    # Short runs: the numbers settle within seconds because no model work adds variance.
    min_duration_ms = 10_000
    min_query_count = 1
    worker_count = 1


@register(NAME, Scenario.OFFLINE)
class Offline(HarnessOverhead):
    batch_size = 1024
    # Above what the native core reaches on a 2-core machine (~0.9M/s, docs/performance.md), so the
    # single Offline query outlasts the minimum duration (LoadGen sizes it from this rate).
    offline_expected_qps = 1_200_000.0


@register(NAME, Scenario.SERVER)
class Server(HarnessOverhead):
    batch_size = 8
    server_batch_timeout_us = 500
    server_target_qps = 5_000.0


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(HarnessOverhead):
    batch_size = 1


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(HarnessOverhead):
    batch_size = 8
