"""One LoadGen test through LoadGen's C++ API: the `--loadgen_path native` of loadgen/paths.py.

The native module carries its own copy of LoadGen, compiled from the `mlcommons-loadgen` sdist of
the version we pin (src/cpp/harness_native/loadgen_sources.py). LoadGen's issue thread hands each
query to the harness's native batch source (`put`, no Python object, no GIL); the harness's workers
complete batches into that same copy (`harness/completion.complete_native`). The settings are
filled by the very sequence that fills `mlperf_loadgen.TestSettings` (settings.fill_test_settings:
mlperf.conf, the benchmark's defaults, user.conf, the command line), and the logs are that
LoadGen's own, which our results reader and the submission checker read as they read the other's.

The QSL's load and unload, and SingleStream/MultiStream's inline run (`after_issue`), are Python
callbacks that take the GIL: rare, outside the timed part, or one per query at those scenarios'
rates; or the inline run is C++ too (`round_trips`: native.InlineRoundTrips). The test itself
runs with the GIL released, on a helper thread, so that Ctrl-C is handled as in the Python path
(loadgen/interruption.py). A callback that raises ends the test: LoadGen is stopped (its logs
flushed, its threads ended) and the error raised here, and another test can run in the same
process.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from mlperf_harness import native
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.handles import SampleLibrary
from mlperf_harness.loadgen.interruption import call_interruptibly
from mlperf_harness.loadgen.results import LoadgenResult, parse_logs
from mlperf_harness.loadgen.run import audit_config_path, prepare_log_dir
from mlperf_harness.loadgen.settings import LoadgenSettings, fill_test_settings

LOADGEN_DISTRIBUTION = "mlcommons-loadgen"


def native_test_settings(
    settings: LoadgenSettings, defaults: LoadgenSettings | None = None
) -> native.TestSettings:
    """The native LoadGen's TestSettings, filled as `settings.to_test_settings` fills
    mlperf_loadgen's."""
    test_settings = native.TestSettings()
    fill_test_settings(
        test_settings, settings, defaults, settings.scenario.loadgen.value, settings.mode.value
    )
    return test_settings


def check_loadgen_version() -> str:
    """The compiled-in LoadGen's version, refused in one line where it is not the installed
    mlperf_loadgen's (a module built against another pin): one run, one LoadGen version."""
    compiled = native.loadgen_version()
    try:
        installed = metadata.version(LOADGEN_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return compiled  # no metadata to compare with (a stripped environment)
    if installed != compiled:
        raise HarnessError(
            f"the native module holds LoadGen {compiled}, but {LOADGEN_DISTRIBUTION} {installed} "
            "is installed: rebuild src/cpp/harness_native for the pinned version"
        )
    return compiled


def run_test_native(
    batches: Any,
    qsl: SampleLibrary,
    settings: LoadgenSettings,
    log_dir: Path,
    defaults: LoadgenSettings | None = None,
    audit_config: Path | None = None,
    after_issue: Callable[[], None] | None = None,
    round_trips: native.InlineRoundTrips | None = None,
) -> LoadgenResult:
    """Run one test of the native LoadGen over `batches` (a native FixedBatcher or
    DynamicBatcher, which the harness's workers drain) and parse its logs. Arguments as
    loadgen.run.run_test's; `after_issue` is called (with the GIL) after each issued query, or
    instead `round_trips` (with a FixedBatcher) answer the query's batches in C++."""
    check_loadgen_version()
    prepare_log_dir(log_dir)
    test_settings = native_test_settings(settings, defaults)
    config = audit_config_path(audit_config)

    def body() -> None:
        native.run_loadgen_test(
            test_settings,
            log_dir=str(log_dir),
            audit_config=config,
            batches=batches,
            total_count=qsl.total_count,
            performance_count=qsl.performance_count,
            load=qsl.load,
            unload=qsl.unload,
            after_issue=after_issue,
            round_trips=round_trips,
        )

    call_interruptibly(body)
    return parse_logs(log_dir).as_scenario(settings.scenario.value)
