"""The device scaling script's plan (each size's own config) and its Server search."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.resnet50 import configs
from mlperf_harness.benchmarks.scaling_plan import (
    Overrides,
    main,
    plan_size,
    search,
    search_next,
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


def _host_valid_up_to(limit: float) -> tuple[list[float], Callable[[float], bool]]:
    runs: list[float] = []

    def run(target: float) -> bool:
        runs.append(target)
        return target <= limit

    return runs, run


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        # VALID at the start: one step up (INVALID), then the midpoint.
        (365_000, [(352_000, True), (366_100, False), (359_000, True)]),
        # VALID twice: two steps up, then the run budget ends it.
        (400_000, [(352_000, True), (366_100, True), (380_200, True)]),
        # INVALID at the start: a step down, VALID, then the midpoint.
        (340_000, [(352_000, False), (337_900, True), (345_000, False)]),
        # Far below: stepping down until the runs are spent, none VALID.
        (100_000, [(352_000, False), (337_900, False), (323_800, False)]),
    ],
)
def test_the_search_steps_then_halves(limit: float, expected: list[tuple[float, bool]]) -> None:
    runs, run = _host_valid_up_to(limit)
    tried = search(352_000, 0.04 * 352_000, 3, run)
    assert tried == expected and runs == [target for target, _ in expected]


def test_the_search_stops_at_half_a_step_and_finds_the_bound_with_more_runs() -> None:
    tried = search(100_000, 4_000, 10, lambda target: target <= 105_000)
    assert tried == [
        (100_000, True),
        (104_000, True),
        (108_000, False),
        (106_000, False),  # 104k and 106k lie half a step apart: the end
    ]
    best = max(target for target, valid in tried if valid)
    assert best == 104_000


def test_an_invalid_run_below_the_best_does_not_bound_the_search() -> None:
    # A noisy host: INVALID at 96k after VALID at 100k: the search still steps up from 100k.
    assert search_next(100_000, 4_000, 5, [(100_000, True), (96_000, False)]) == 104_000


def test_the_search_never_repeats_a_target_nor_falls_to_zero() -> None:
    assert search_next(100, 100, 5, [(100, False)]) is None
    assert search_next(1_000, 40, 5, [(1_000, True), (1_000, False)]) is None


def _result(path: Path, target: float, valid: bool, p99_ms: float) -> str:
    path.write_text(
        json.dumps(
            {
                "result_valid": valid,
                "completed_samples_per_second": target,
                "latency_ns": {"p99": p99_ms * 1e6},
                "settings": {"server_target_qps": {"value": target, "from": "command line"}},
            }
        )
    )
    return str(path)


def test_next_server_rate_reads_the_runs_so_far(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["next_server_rate", "--start", "176000"]) == 0
    assert capsys.readouterr().out == "176000\n"
    # LoadGen's VALID with p99 over 15 ms counts as INVALID: one step down.
    first = _result(tmp_path / "a.json", 176_000, True, 15.5)
    assert main(["next_server_rate", "--start", "176000", first]) == 0
    assert capsys.readouterr().out == "169000\n"
    second = _result(tmp_path / "b.json", 169_000, True, 9.0)
    third = _result(tmp_path / "c.json", 172_500, True, 11.0)
    assert main(["next_server_rate", "--start", "176000", first, second, third]) == 0
    assert capsys.readouterr().out == ""  # three runs: the default budget


def test_plan_names_the_missing_values_for_an_unknown_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--gpus", "1 2", "--gpu_name", "NVIDIA L40S"]) == 2
    assert "L40Sx1 has no ResNet-50 config" in capsys.readouterr().err
    assert main(["plan", "--gpus", "1 4", "--gpu_name", "NVIDIA H200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["H200-SXM-141GBx1", "H200-SXM-141GBx4"]
