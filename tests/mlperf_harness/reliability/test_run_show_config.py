"""--show_config and --help tell the whole truth: every backend, a bad backend refused, the stand-in's
short run and the LoadGen values beneath the config, all without preparing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli


def test_show_config_refuses_an_unknown_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--show_config", "--backend", "bogus", "--scratch_path", str(tmp_path / "scratch")]
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    assert capsys.readouterr().err.strip() == (
        "resnet50: error: unknown backend 'bogus': choose one of null, onnxruntime, sim, tensorrt, torch"
    )


def test_show_config_shows_the_stand_in_run_and_loadgen_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user_conf = tmp_path / "user.conf"
    user_conf.write_text("resnet50.Offline.target_qps = 42\nresnet50.Server.target_qps = 7\n")
    scratch = tmp_path / "scratch"
    argv = ["--show_config", "--scratch_path", str(scratch), "--user_conf", str(user_conf)]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    out = capsys.readouterr().out
    # No official model on this scratch: the run would be the stand-in's short one.
    assert "min_duration_ms = 60000  # stand-in short run" in out
    assert "min_query_count = 1  # stand-in short run" in out
    assert "LoadGen's mlperf.conf (built in)" in out and "min_duration_ms = 600000" in out
    assert "performance_sample_count = 1024" in out
    assert "resnet50.Offline.target_qps = 42  # line 1" in out
    assert "resnet50.Server.target_qps" not in out  # not this run's scenario
    assert not scratch.exists()


def test_help_lists_every_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_benchmark_cli(BENCHMARK, ["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the help text
    assert "inference backend: null, onnxruntime, sim, tensorrt, torch" in out
