"""What the harness needs to know about one benchmark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.harness.sut import Postprocess, no_postprocess
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario


@dataclass(frozen=True)
class ScenarioConfig:
    """A benchmark's defaults for one scenario; command-line flags override them."""

    loadgen: LoadgenSettings
    batch_size: int
    server_batch_timeout_us: int = 2_000
    worker_count: int = 1


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str  # also the model name in mlperf.conf / user.conf
    default_backend: str
    scenario_config: Callable[[Scenario], ScenarioConfig]
    make_store: Callable[[], SampleStore]
    postprocess: Postprocess = no_postprocess
