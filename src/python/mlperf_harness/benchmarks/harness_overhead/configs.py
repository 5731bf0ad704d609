"""harness_overhead's settings per scenario (and system, where one needs its own).

Its runs are sized by a count, not by a time: the null backend has no engine to time at a run's
start (config/measured_rates.py), and how fast the harness goes is what this benchmark measures,
so no rate can be known beforehand. A minimum duration of 1 ms is met on any machine, and the
query count sets how long a run lasts there; the counts below take seconds on a 2-core machine.
"""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "harness_overhead"


class HarnessOverhead(BenchmarkConfig):
    backend = "null"
    min_duration_ms = 1
    worker_count = 1


@register(NAME, Scenario.OFFLINE)
class Offline(HarnessOverhead):
    batch_size = 1024
    # The one query's samples (Offline issues min_query_count samples when no rate sizes it):
    # 4-10 s at the 1-2.5M samples/s a 2-core machine completes (docs/performance.md).
    min_query_count = 10_000_000


@register(NAME, Scenario.SERVER)
class Server(HarnessOverhead):
    batch_size = 8
    server_batch_timeout_us = 500
    # The experiment's input, not a machine's speed: far below what any machine holds (a 2-core
    # one about 100k queries/s), so the default run shows the harness working; search with
    # --server_target_qps. 50,000 queries: 10 s at this rate.
    server_target_qps = 5_000.0
    min_query_count = 50_000


# LoadGen generates SingleStream and MultiStream queries up front and holds them all in memory
# (~0.5 kB each): a count keeps that bounded whatever the machine. The null backend answers a
# query in 3-50 us.
@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(HarnessOverhead):
    batch_size = 1
    min_query_count = 200_000


@register(NAME, Scenario.MULTI_STREAM)
class MultiStream(HarnessOverhead):
    batch_size = 8
    min_query_count = 100_000
