"""harness_overhead: the null backend over empty samples, so every microsecond is harness or LoadGen."""

from __future__ import annotations

from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.harness_overhead import configs
from mlperf_harness.benchmarks.spec import Benchmark, PreparedRun
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.harness.sample_store import EmptySampleStore
from mlperf_harness.submission.rules import AuditTest

SAMPLE_COUNT = 1024  # as many as ResNet-50's performance sample count, so runs look alike


class HarnessOverhead(Benchmark):
    name = configs.NAME
    # Not a submission model; it takes both audits so their plumbing can be run without a model.
    audit_tests = (AuditTest.TEST01, AuditTest.TEST04)

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        return PreparedRun(EmptySampleStore(SAMPLE_COUNT, SAMPLE_COUNT), BackendOptions())


BENCHMARK = HarnessOverhead()
