"""RetinaNet over Triton on the CPU: each image's response is as many detection rows as its
postprocessing keeps, so responses differ in length. The server sends the raw head outputs and the
client cuts them into each image's rows for the servers' backend (Benchmark.served_sized_postprocess;
the client itself prepares for "null", which would answer every image with no detections). One
real server of the stand-in, AccuracyOnly runs across it: the same detections as the direct
harness, image for image. Slow (the stand-in's build, a minute or two)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from triton_stand_in_server import accuracy_log, direct_accuracy_run, stand_in_server

from mlperf_harness.benchmarks.retinanet.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli

pytestmark = pytest.mark.slow

COUNT = 4  # images: enough for responses of different lengths (checked below)


def test_detections_of_different_lengths_answer_as_the_direct_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    accuracy = direct_accuracy_run(BENCHMARK, scratch, tmp_path, COUNT)
    logs = tmp_path / "triton"
    with stand_in_server(BENCHMARK, scratch, tmp_path) as flags:
        assert run_benchmark_cli(BENCHMARK, [*accuracy, "--log_dir", str(logs), *flags]) == 0
        capsys.readouterr()
        # The answer computed on the server cannot carry responses of different lengths.
        answer = [*accuracy, "--log_dir", str(tmp_path / "answer"), *flags]
        assert run_benchmark_cli(BENCHMARK, [*answer, "--triton_response", "answer"]) == 2
        assert "responses differ in length" in capsys.readouterr().err
    direct = accuracy_log(tmp_path / "direct", COUNT)
    assert accuracy_log(logs, COUNT) == direct
    assert len({len(data) for data in direct.values()}) > 1  # lengths differ
    assert all(len(data) // 2 % 28 == 0 and data for data in direct.values())  # rows of 7 floats
    record = json.loads((logs / "result.json").read_text())
    direct_record = json.loads((tmp_path / "direct" / "result.json").read_text())
    assert record["accuracy"] == direct_record["accuracy"]
