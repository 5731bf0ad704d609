"""DLRM-v2-99 and DLRM-v2-99.9 on the H200 configs (--show_config): the 99% variant runs the
dense part in FP8 with FP8's measured rates, --config_ver high_accuracy in fp16 with fp16's (the
layer names its origin); a --precision flag over the high-accuracy layer times its own rates, and
so does DLRM-v2-99.9 where only FP8 has one. Systems without an FP8 config (the CPU's, the sharded
H100s') are left as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.benchmarks.dlrm_v2 import configs
from mlperf_harness.benchmarks.dlrm_v2.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.loadgen.settings import Scenario

H200, H200X2 = "H200-SXM-141GBx1", "H200-SXM-141GBx2"
FIELDS = {"Offline": "offline_expected_qps", "Server": "server_target_qps"}


def shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], system: str, scenario: str, *flags: str
) -> str:
    argv = ["--show_config", "--system_name", system, "--scenario", scenario, *flags]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--scratch_path", str(tmp_path)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_the_99_percent_variant_runs_fp8_and_99_9_fp16_each_with_its_rates(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    field, key = FIELDS[scenario], Scenario(scenario)
    fp8 = configs.MEASURED_RATES["fp8"][H200][key]
    fp16 = configs.MEASURED_RATES["fp16"][H200][key]
    default = shown(tmp_path, capsys, H200, scenario)
    assert "precision = 'fp8'" in default and f"{field} = {fp8}" in default
    high = shown(tmp_path, capsys, H200, scenario, "--config_ver", "high_accuracy")
    assert "precision = 'fp16'  # --config_ver high_accuracy" in high
    assert f"{field} = {fp16}  # --config_ver high_accuracy" in high
    flagged = shown(
        tmp_path, capsys, H200, scenario, "--config_ver", "high_accuracy", "--precision", "fp8"
    )
    assert "precision = 'fp8'  # command line" in flagged
    assert f"{field} = (timed at start" in flagged


def test_a_rate_measured_in_fp8_alone_is_timed_at_start_in_fp16(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two H200s' Server ran in FP8 only: DLRM-v2-99.9 does not run with FP8's rate."""
    fp8 = configs.MEASURED_RATES["fp8"][H200X2][Scenario.SERVER]
    assert Scenario.SERVER not in configs.MEASURED_RATES["fp16"][H200X2]
    assert f"server_target_qps = {fp8}" in shown(tmp_path, capsys, H200X2, "Server")
    high = shown(tmp_path, capsys, H200X2, "Server", "--config_ver", "high_accuracy")
    assert "precision = 'fp16'  # --config_ver high_accuracy" in high
    assert "server_target_qps = (timed at start" in high


@pytest.mark.parametrize("system", ["", "H100-SXM-80GBx2"])
def test_systems_without_an_fp8_config_keep_it(system: str) -> None:
    assert configs.high_accuracy_settings(system, Scenario.OFFLINE) is None
