"""The device scaling script's plan: each size's own config (its Server search: test_server_search)."""

from __future__ import annotations

import pytest

from mlperf_harness.benchmarks.resnet50 import configs
from mlperf_harness.benchmarks.scaling_plan import (
    Overrides,
    main,
    plan_size,
    size_system,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.systems.detect import GpuInfo, SystemInfo

GIB = 1 << 30
HOST = SystemInfo("Intel(R) Xeon(R) Platinum 8480C", 128, 2048 * GIB, ())
H100 = GpuInfo("NVIDIA H100 80GB HBM3", 80 * GIB)


@pytest.mark.parametrize(
    ("gpus", "system", "path"),
    [
        (1, "H100-SXM-80GBx1", "python"),
        (2, "H100-SXM-80GBx2", "python"),
        (4, "H100-SXM-80GBx4", "native"),
        (8, "H100-SXM-80GBx8", "native"),
    ],
)
def test_each_size_of_an_eight_h100_host_runs_its_own_config(
    gpus: int, system: str, path: str
) -> None:
    assert size_system(H100, gpus, HOST) == system
    plan = plan_size(gpus, system, Overrides())
    offline, server, timeout = configs.GPU_RATES[system]
    assert (plan.precision, plan.loadgen_path) == ("fp8", path)
    assert (plan.offline_qps, plan.server_qps, plan.server_timeout_us) == (offline, server, timeout)
    assert (plan.offline_batch, plan.server_batch, plan.streams) == (256, 128, 2)
    assert plan.line().split()[:4] == [str(gpus), system, "fp8", path]


def test_overrides_win_at_every_size() -> None:
    overrides = Overrides("fp16", "native", 30_000.0, 26_500.0, 3)
    plan = plan_size(2, "H200-SXM-141GBx2", overrides)
    assert (plan.precision, plan.loadgen_path, plan.streams) == ("fp16", "native", 3)
    assert (plan.offline_qps, plan.server_qps) == (60_000.0, 53_000.0)


def test_a_size_without_a_config_is_refused_unless_every_value_is_given() -> None:
    system = size_system(GpuInfo("NVIDIA L40S", 48 * GIB), 4, HOST)
    assert system == "L40Sx4"
    with pytest.raises(HarnessError, match=r"no ResNet-50 config.*PRECISION, OFFLINE_QPS_PER_GPU"):
        plan_size(4, system, Overrides())
    plan = plan_size(4, system, Overrides("fp16", None, 10_000.0, 9_000.0))
    # Not the CPU defaults (onnxruntime's batch 8, fp32): the GPU batching.
    assert (plan.precision, plan.loadgen_path, plan.offline_batch) == ("fp16", "python", 256)
    assert (plan.offline_qps, plan.server_qps) == (40_000.0, 36_000.0)


def test_plan_names_the_missing_values_for_an_unknown_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--gpus", "1 2", "--gpu_name", "NVIDIA L40S"]) == 2
    assert "L40Sx1 has no ResNet-50 config" in capsys.readouterr().err
    assert main(["plan", "--gpus", "1 4", "--gpu_name", "NVIDIA H200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["H200-SXM-141GBx1", "H200-SXM-141GBx4"]
