"""DLRM-v2's command line: a run is for v5.1 (its last round) without --round, v6.1 refuses it in
one line, --show_config shows the system config's embedding placement, and --embedding (how the
torch runners pool the lookups) and --cross (how their cross layers' update is done) are DLRM-v2's
torch backend's alone, resolved into the runners' plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from owned_settings import check_owned_setting

from mlperf_harness.benchmarks.dlrm_v2.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli


def test_show_config_on_an_h200_says_replicated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--show_config", "--system_name", "H200-SXM-141GBx1", "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    out = capsys.readouterr().out
    assert "embedding_placement = 'replicated'" in out
    assert "performance_sample_count = 204800" in out
    sharded = ["--show_config", "--system_name", "H100-SXM-80GBx2", "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, sharded) == 0
    assert "embedding_placement = 'sharded'" in capsys.readouterr().out


def test_round_v6_1_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--round", "v6.1", "--backend", "null", "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dlrm-v2-99, which MLCommons' v6.1 checker does not list" in err[0]


def test_embedding_is_dlrm_v2_torchs_setting_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_owned_setting(capsys, tmp_path, BENCHMARK, "embedding", ("kernel-int8", "kernel"),
                        "triton", "torch, kernel, kernel-int8")  # fmt: skip


def test_cross_is_dlrm_v2_torchs_setting_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_owned_setting(capsys, tmp_path, BENCHMARK, "cross", ("kernel", "torch"), "triton",
                        "torch, kernel")  # fmt: skip


def test_the_cross_kernel_with_fp8_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--backend", "torch", "--precision", "fp8", "--cross", "kernel"]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--scratch_path", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "cross kernel (--cross kernel) runs the fp16 dense part, not --precision fp8" in err[0]


def test_the_torch_plan_is_resolved_once_from_the_settings() -> None:
    from mlperf_harness.benchmarks.dlrm_v2.torch_plan import torch_plan
    from mlperf_harness.config.fields import HarnessSettings
    from mlperf_harness.errors import HarnessError

    plan = torch_plan(HarnessSettings(backend="torch", precision="fp16"))
    assert (plan.embedding, plan.precision, plan.placement) == ("kernel", "fp16", None)
    assert plan.cross == "torch"  # until a GPU times the cross kernel faster
    assert torch_plan(HarnessSettings(precision="fp16", cross="kernel")).cross == "kernel"
    plan = torch_plan(
        HarnessSettings(precision="fp8", embedding="kernel-int8", embedding_placement="sharded")
    )
    assert plan.provenance() == {
        "embedding": "kernel-int8",
        "tables": "int8 rows",
        "dense_precision": "fp8",
        "cross": "torch",
    }
    with pytest.raises(HarnessError, match="fp16 or fp8, not --precision fp32"):
        torch_plan(HarnessSettings(precision="fp32"))
