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
    # Above what the native core reaches on a 2-core machine (~0.9M/s in docs/performance.md; 1.38M
    # and 1.47M seen on 2026-11-23, when 1.2M here made short runs INVALID), so the single Offline
    # query outlasts the minimum duration (LoadGen sizes it from this rate).
    offline_expected_qps = 2_000_000.0


@register(NAME, Scenario.SERVER)
class Server(HarnessOverhead):
    batch_size = 8
    server_batch_timeout_us = 500
    server_target_qps = 5_000.0


# LoadGen generates SingleStream and MultiStream queries for twice the minimum duration at the
# expected latency and holds them all in memory (~0.5 kB each); a SUT more than twice as fast as
# expected runs out of them, which LoadGen logs as an error (the run fails). The null backend
# answers in 3-50 us, where a model's mlperf.conf latency is 10 ms: 4 us and 2 s generate 1M
# queries (~0.5 GB), and a query of the null backend seldom takes under 2 us.
@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(HarnessOverhead):
    batch_size = 1
    min_duration_ms = 2_000
    single_stream_expected_latency_ns = 4_000


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(HarnessOverhead):
    batch_size = 8
    min_duration_ms = 2_000
    multi_stream_expected_latency_ns = 4_000
