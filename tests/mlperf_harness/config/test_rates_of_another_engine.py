"""A rate recorded in a GPU config belongs to the engine that config names: DLRM-v2's H200 rates
were measured with the pooling kernel and torch's cross layers, RetinaNet's with the scan NMS, so a run that asks for
torch's embedding_bag, the cross kernel or the rounds NMS by flag times its own rates at start
(config/measured_rates.py's ENGINE_FIELDS), and one that asks for the same engine keeps them."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.benchmarks.dlrm_v2 import configs as dlrm_v2_configs
from mlperf_harness.benchmarks.dlrm_v2.benchmark import BENCHMARK as DLRM_V2
from mlperf_harness.benchmarks.retinanet import configs as retinanet_configs
from mlperf_harness.benchmarks.retinanet.benchmark import BENCHMARK as RETINANET
from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.loadgen.settings import Scenario

H200 = "H200-SXM-141GBx1"


def _recorded(rates: dict[str, dict[Scenario, float]]) -> tuple[str, str]:
    """The H200 config's (Offline, Server) rates as --show_config prints them."""
    return str(rates[H200][Scenario.OFFLINE]), str(rates[H200][Scenario.SERVER])


DLRM_V2_RATES = _recorded(dlrm_v2_configs.MEASURED_RATES[dlrm_v2_configs.GPU_PRECISION])
CASES = [  # benchmark, recorded (Offline, Server), the flag of the same engine, of another one
    (DLRM_V2, DLRM_V2_RATES, ("--embedding", "kernel"), ("--embedding", "torch")),
    (DLRM_V2, DLRM_V2_RATES, ("--cross", "torch"), ("--cross", "kernel")),
    (
        RETINANET,
        _recorded(retinanet_configs.MEASURED_RATES),
        ("--nms", "scan"),
        ("--nms", "rounds"),
    ),
]


def _shown(
    benchmark: Benchmark, scratch: Path, capsys: pytest.CaptureFixture[str], *flags: str
) -> str:
    """What --show_config prints for one H200 with `flags`."""
    argv = ["--show_config", "--system_name", H200, *flags, "--scratch_path", str(scratch)]
    assert run_benchmark_cli(benchmark, argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("benchmark", "rates", "same", "other"), CASES, ids=["dlrm-v2", "dlrm-v2-cross", "retinanet"]
)
def test_one_h200s_rates_are_its_engines_alone(
    benchmark: Benchmark,
    rates: tuple[str, str],
    same: tuple[str, str],
    other: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def shown(scenario: str, *flags: str) -> str:
        return _shown(benchmark, tmp_path, capsys, "--scenario", scenario, *flags)

    for scenario, field, rate in zip(
        ("Offline", "Server"), ("offline_expected_qps", "server_target_qps"), rates, strict=True
    ):
        assert f"{field} = {rate}" in shown(scenario)
        assert f"{field} = {rate}" in shown(scenario, *same)
        assert f"{field} = (timed at start" in shown(scenario, *other)


@pytest.mark.parametrize(
    ("scenario", "field", "rate", "config_batch"),
    [
        ("Offline", "offline_expected_qps", _recorded(retinanet_configs.MEASURED_RATES)[0], "32"),
        ("Server", "server_target_qps", _recorded(retinanet_configs.MEASURED_RATES)[1], "16"),
    ],
)
def test_a_batch_size_flag_is_another_engine(
    scenario: str,
    field: str,
    rate: str,
    config_batch: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """RetinaNet's H200 rates were measured at the config's batch sizes (Offline 32, Server up to
    16; up to 8, Server was INVALID near the rate recorded): another batch size times its own."""

    def shown(*flags: str) -> str:
        return _shown(RETINANET, tmp_path, capsys, "--scenario", scenario, *flags)

    assert f"{field} = {rate}" in shown("--batch_size", config_batch)
    other = shown("--batch_size", "8")
    assert f"{field} = (timed at start" in other
    assert (
        f"{field} of the config (backend torch, precision fp16, batch_size {config_batch}" in other
    )
