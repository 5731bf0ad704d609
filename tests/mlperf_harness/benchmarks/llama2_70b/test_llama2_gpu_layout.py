"""Where Llama2-70B's GPU engines go, without a GPU: the known systems' tensor parallelism (one
H200 holds the FP8 model, two H100s hold it together), the groups a host's GPUs form, and the
flag that overrides the config."""

from __future__ import annotations

import pytest

from mlperf_harness.benchmarks.llama2_70b import configs
from mlperf_harness.benchmarks.llama2_70b.engines import tensor_parallel_groups
from mlperf_harness.config.registry import DEFAULT_REGISTRY
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario


@pytest.mark.parametrize(
    ("system", "tensor_parallel"),
    [
        ("H200-SXM-141GBx1", 1),
        ("H200-SXM-141GBx8", 1),
        ("H100-SXM-80GBx2", 2),
        ("H100-SXM-80GBx8", 2),
    ],
)
@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SERVER, Scenario.INTERACTIVE])
def test_each_known_gpu_system_names_its_tensor_parallelism(
    system: str, tensor_parallel: int, scenario: Scenario
) -> None:
    settings = DEFAULT_REGISTRY.resolve(configs.NAME, scenario, system).settings
    assert (settings.backend, settings.precision) == ("torch", "fp8")
    assert settings.tensor_parallel == tensor_parallel


def test_the_cpu_config_runs_one_onnxruntime_engine() -> None:
    settings = DEFAULT_REGISTRY.resolve(configs.NAME, Scenario.OFFLINE, "a CPU").settings
    assert settings.backend == "onnxruntime" and settings.tensor_parallel is None


def test_a_hosts_gpus_form_groups_of_the_tensor_parallel_size() -> None:
    assert tensor_parallel_groups(1, 1) == [0]
    assert tensor_parallel_groups(8, 1) == list(range(8))
    assert tensor_parallel_groups(4, 2) == [0, 2]
    assert tensor_parallel_groups(8, 4) == [0, 4]
    with pytest.raises(HarnessError, match="does not divide this host's 3 GPUs"):
        tensor_parallel_groups(3, 2)
    with pytest.raises(HarnessError, match="torch sees none"):
        tensor_parallel_groups(0, 1)
