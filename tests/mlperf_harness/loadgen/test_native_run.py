"""The native LoadGen's settings and version: filled by the sequence that fills mlperf_loadgen's
(mlperf.conf, the benchmark's defaults, user.conf, the command line), field for field the same."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import mlperf_loadgen as lg
import pytest

from mlperf_harness import native
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.native_run import check_loadgen_version, native_test_settings
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode, to_test_settings


def fields(test_settings: object) -> dict[str, object]:
    values = {name: getattr(test_settings, name) for name in native.TestSettings.FIELDS}
    for name in ("scenario", "mode"):  # mlperf_loadgen's enums, the native module's names
        values[name] = getattr(values[name], "name", values[name])
    return values


# Interactive (LoadGen's Server under another model's name): tests/mlperf_harness/loadgen/test_interactive.py
@pytest.mark.parametrize("scenario", [s for s in Scenario if s is not Scenario.INTERACTIVE])
@pytest.mark.parametrize("mode", [TestMode.PERFORMANCE_ONLY, TestMode.ACCURACY_ONLY])
def test_native_settings_are_mlperf_loadgens(
    scenario: Scenario, mode: TestMode, tmp_path: Path
) -> None:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text(
        f"resnet50.{scenario.value}.min_query_count = 777\n"
        "resnet50.*.performance_sample_count_override = 333\n"
        "*.Server.target_latency = 20\n"
    )
    defaults = LoadgenSettings("resnet50", scenario, min_duration_ms=1234, min_query_count=99)
    flags = LoadgenSettings("resnet50", scenario, mode, user_conf=user_conf, max_duration_ms=60_000)
    expected = fields(to_test_settings(flags, defaults))
    assert fields(native_test_settings(flags, defaults)) == expected
    assert expected["min_duration_ms"] == 1234 and expected["min_query_count"] == 777
    assert expected["scenario"] == scenario.value and expected["mode"] == mode.value


def test_every_field_of_mlperf_loadgens_test_settings_is_there() -> None:
    theirs = {name for name in dir(lg.TestSettings) if not name.startswith("_")} - {"FromConfig"}
    assert theirs == set(native.TestSettings.FIELDS)


def test_bad_scenario_names_and_unreadable_user_conf(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown LoadGen scenario Batch"):
        native.TestSettings().scenario = "Batch"
    missing = tmp_path / "user.conf"
    missing.write_text("")
    flags = LoadgenSettings("resnet50", Scenario.OFFLINE, user_conf=missing)
    missing.unlink()
    with pytest.raises(HarnessError, match="could not read"):
        native_test_settings(flags)


def test_the_compiled_loadgen_is_the_installed_version() -> None:
    assert native.loadgen_version() == metadata.version("mlcommons-loadgen")
    assert check_loadgen_version() == native.loadgen_version()
