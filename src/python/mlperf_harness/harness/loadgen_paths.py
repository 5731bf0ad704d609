"""Run a HarnessSUT under the LoadGen its `loadgen_path` names (loadgen/paths.py): one call for
both paths, so that a caller (run_harness, the harness_overhead tools) cannot pair a SUT with the
other LoadGen."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from mlperf_harness.harness.sut import HarnessSUT
from mlperf_harness.loadgen.handles import SampleLibrary, query_sample_library, system_under_test
from mlperf_harness.loadgen.native_run import run_test_native
from mlperf_harness.loadgen.paths import NATIVE
from mlperf_harness.loadgen.results import LoadgenResult
from mlperf_harness.loadgen.run import run_test
from mlperf_harness.loadgen.settings import LoadgenSettings


class PythonPathSUT(Protocol):
    """A SUT that only mlperf_loadgen runs (the Triton harness's, the serving loop)."""

    def issue_queries(self, query_samples: Sequence[Any], /) -> None: ...

    def flush_queries(self) -> None: ...


def run_under_loadgen(
    sut: HarnessSUT | PythonPathSUT,
    qsl: SampleLibrary,
    settings: LoadgenSettings,
    log_dir: Path,
    defaults: LoadgenSettings | None = None,
    audit_config: Path | None = None,
) -> LoadgenResult:
    """One LoadGen test of `sut` (entered: its workers running); arguments as run_test's."""
    if isinstance(sut, HarnessSUT) and sut.loadgen_path == NATIVE:
        return run_test_native(
            sut.batches,
            qsl,
            settings,
            log_dir,
            defaults,
            audit_config,
            after_issue=sut.run_pending if sut.inline and sut.round_trips is None else None,
            round_trips=sut.round_trips,
        )
    with (
        system_under_test(sut.issue_queries, sut.flush_queries) as sut_handle,
        query_sample_library(qsl.total_count, qsl.performance_count, qsl.load, qsl.unload) as (
            qsl_handle
        ),
    ):
        return run_test(sut_handle, qsl_handle, settings, log_dir, defaults, audit_config)
