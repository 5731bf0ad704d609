"""The Interactive scenario: LoadGen's Server under the model's "-interactive" name in mlperf.conf
(Llama2-70B: TTFT 450 ms and TPOT 40 ms instead of Server's 2 s and 200 ms), its user.conf lines
and the fields that apply to it those of Server."""

from __future__ import annotations

from pathlib import Path

import mlperf_loadgen as lg

from mlperf_harness.config.fields import scenario_problem
from mlperf_harness.loadgen.settings import (
    LoadgenSettings,
    Scenario,
    TestMode,
    conf_model,
    effective_user_conf,
    mlperf_conf_values,
    to_test_settings,
)
from mlperf_harness.loadgen.user_conf import applicable, read_user_conf


def test_interactive_runs_as_server_under_the_interactive_model() -> None:
    assert Scenario.parse("interactive") is Scenario.INTERACTIVE
    assert Scenario.INTERACTIVE.loadgen is Scenario.SERVER
    assert Scenario.SERVER.loadgen is Scenario.SERVER
    assert conf_model("llama2-70b", Scenario.INTERACTIVE) == "llama2-70b-interactive"
    assert conf_model("llama2-70b", Scenario.SERVER) == "llama2-70b"
    interactive = to_test_settings(
        LoadgenSettings("llama2-70b", Scenario.INTERACTIVE, TestMode.PERFORMANCE_ONLY)
    )
    server = to_test_settings(LoadgenSettings("llama2-70b", Scenario.SERVER))
    assert interactive.scenario == lg.TestScenario.Server
    assert (interactive.ttft_latency, interactive.tpot_latency) == (450_000_000, 40_000_000)
    assert (server.ttft_latency, server.tpot_latency) == (2_000_000_000, 200_000_000)
    assert interactive.use_token_latencies and server.use_token_latencies
    assert "server_target_qps" in mlperf_conf_values("llama2-70b", Scenario.INTERACTIVE)
    assert scenario_problem("server_target_qps", Scenario.INTERACTIVE) is None
    assert scenario_problem("offline_expected_qps", Scenario.INTERACTIVE) is not None


def test_user_conf_lines_of_interactive_are_the_interactive_models(tmp_path: Path) -> None:
    conf = tmp_path / "user.conf"
    conf.write_text(
        "llama2-70b.Server.target_qps = 5\nllama2-70b-interactive.Server.target_qps = 2\n"
    )
    lines = read_user_conf(conf, "llama2-70b")
    (chosen,) = [line for line in applicable(lines, "llama2-70b", Scenario.INTERACTIVE)]
    assert chosen.value == "2"
    (server,) = [line for line in applicable(lines, "llama2-70b", Scenario.SERVER)]
    assert server.value == "5"
    text = effective_user_conf(
        LoadgenSettings("llama2-70b", Scenario.INTERACTIVE, server_target_qps=1.5)
    )
    assert "llama2-70b-interactive.Server.target_qps = 1.5" in text


def test_the_native_loadgen_runs_interactive_under_the_same_settings(tmp_path: Path) -> None:
    from mlperf_harness import native
    from mlperf_harness.loadgen.native_run import native_test_settings

    def fields(test_settings: object) -> dict[str, object]:
        values = {name: getattr(test_settings, name) for name in native.TestSettings.FIELDS}
        for name in ("scenario", "mode"):  # mlperf_loadgen's enums, the native module's names
            values[name] = getattr(values[name], "name", values[name])
        return values

    user_conf = tmp_path / "user.conf"
    user_conf.write_text("llama2-70b-interactive.Server.min_query_count = 777\n")
    flags = LoadgenSettings("llama2-70b", Scenario.INTERACTIVE, user_conf=user_conf)
    expected = fields(to_test_settings(flags))
    assert fields(native_test_settings(flags)) == expected
    assert expected["min_query_count"] == 777 and expected["scenario"] == "Server"
