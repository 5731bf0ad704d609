"""DLRM-v2's command line: a run is for v5.1 (its last round) without --round, v6.1 refuses it in
one line, and --show_config shows the system config's embedding placement."""

from __future__ import annotations

from pathlib import Path

import pytest

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
