"""The ceiling's contenders under the real LoadGen: the harness under either LoadGen path and the
native path with C++ workers answer every sample, and each reports when LoadGen handed it the
first sample (the Offline prelude)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.benchmarks.harness_overhead import configs, measure
from mlperf_harness.loadgen.paths import NATIVE, PYTHON
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario

CONTENDERS = {
    PYTHON: measure.harness_contender(PYTHON),
    NATIVE: measure.harness_contender(NATIVE),
    "cpp_workers": measure.CPP_WORKERS,
}


@pytest.mark.parametrize("name", list(CONTENDERS))
@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER])
def test_each_contender_runs_and_times_its_prelude(
    name: str, scenario: Scenario, tmp_path: Path
) -> None:
    settings = LoadgenSettings(
        model=configs.NAME,
        scenario=scenario,
        min_duration_ms=200,
        min_query_count=1000,
        offline_expected_qps=100_000.0,
        server_target_qps=5000.0,
    )
    timed = measure.run_timed(CONTENDERS[name], settings, tmp_path)
    assert timed.result.query_count is not None and timed.result.query_count >= 1
    assert timed.result.errors == []
    assert timed.prelude_s is not None and 0 < timed.prelude_s < 10
    expected = 22_000 if scenario is Scenario.OFFLINE else 1000  # 1.1 x 100k/s x 0.2 s
    assert timed.issued_samples >= expected
