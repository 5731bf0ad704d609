"""ResNet-50's GPU configs: each lent or planned GPU system resolves to its own, on the torch backend."""

from __future__ import annotations

import pytest

from mlperf_harness.benchmarks.resnet50 import configs
from mlperf_harness.config.registry import resolve
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.systems.known import KNOWN_SYSTEMS

SYSTEMS = (
    "H100-SXM-80GBx1",
    "H100-SXM-80GBx2",
    "H100-SXM-80GBx4",
    "H100-SXM-80GBx8",
    "H200-SXM-141GBx1",
    "H200-SXM-141GBx2",
    "H200-SXM-141GBx4",
    "H200-SXM-141GBx8",
)
# ResNet-50's scenarios (it has no Interactive)
RESNET50_SCENARIOS = [s for s in Scenario if s is not Scenario.INTERACTIVE]


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("scenario", RESNET50_SCENARIOS)
def test_each_gpu_system_has_its_own_config(system: str, scenario: Scenario) -> None:
    assert system in {known.name for known in KNOWN_SYSTEMS}
    resolved = resolve(configs.NAME, scenario, system)
    assert resolved.key.system == system
    assert resolved.settings.backend == "torch" and resolved.settings.start_from_device


@pytest.mark.parametrize(
    ("one_gpu", "derived"),
    [
        ("H200-SXM-141GBx1", ("H200-SXM-141GBx2", "H200-SXM-141GBx4", "H200-SXM-141GBx8")),
        ("H100-SXM-80GBx1", ("H100-SXM-80GBx4", "H100-SXM-80GBx8")),
    ],
)
def test_derived_multi_gpu_rates_are_n_times_one_gpu(
    one_gpu: str, derived: tuple[str, ...]
) -> None:
    one = configs.GPU_RATES[one_gpu]
    for system in derived:
        gpus = int(system.rsplit("x", 1)[1])
        offline, server, timeout = configs.GPU_RATES[system]
        assert (offline, server, timeout) == (gpus * one[0], gpus * one[1], one[2])


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("scenario", [Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM])
def test_latency_scenarios_on_gpus_run_loadgen_s_cpp_path(system: str, scenario: Scenario) -> None:
    assert resolve(configs.NAME, scenario, system).settings.loadgen_path == "native"
    assert resolve(configs.NAME, scenario, "unknown-machine").settings.loadgen_path is None


@pytest.mark.parametrize("system", SYSTEMS)
def test_gpu_systems_run_the_fp8_engine_but_at_batch_one(system: str) -> None:
    precisions = {
        scenario: resolve(configs.NAME, scenario, system).settings.precision
        for scenario in RESNET50_SCENARIOS
    }
    assert precisions == {
        Scenario.OFFLINE: "fp8",
        Scenario.SERVER: "fp8",
        Scenario.MULTI_STREAM: "fp8",
        Scenario.SINGLE_STREAM: "fp16",
    }
    # A machine the configs do not know keeps the CPU default.
    assert resolve(configs.NAME, Scenario.OFFLINE, "unknown-machine").settings.precision == "fp32"


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER])
def test_four_and_eight_gpus_run_loadgen_s_cpp_path(system: str, scenario: Scenario) -> None:
    path = resolve(configs.NAME, scenario, system).settings.loadgen_path
    assert path == ("native" if system in configs.NATIVE_LOADGEN_SYSTEMS else None)
    assert {
        "H100-SXM-80GBx4",
        "H100-SXM-80GBx8",
        "H200-SXM-141GBx4",
        "H200-SXM-141GBx8",
    } == configs.NATIVE_LOADGEN_SYSTEMS
