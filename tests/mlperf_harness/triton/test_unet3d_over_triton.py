"""3D-UNet over Triton on the CPU: its samples are whole CT volumes of different shapes, its runner
cuts each into windows and blends them (the direct harness wraps the backend's runner; the server
serves the same wrapped runner). One real server of the stand-in, an AccuracyOnly run across it:
the same labels as the direct harness, volume for volume. Slow (the stand-in's build, a minute)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from triton_stand_in_server import accuracy_log, direct_accuracy_run, stand_in_server

from mlperf_harness.benchmarks.unet3d.benchmark import BENCHMARK
from mlperf_harness.benchmarks.unet3d.stand_in import PREPROCESSED_DIR, stand_in_dir
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.datasets.kits19.store import load_preprocessed

pytestmark = pytest.mark.slow

COUNT = 3  # volumes: the stand-in's first three cases hold two shapes (checked below)


def test_volumes_of_different_shapes_answer_as_the_direct_harness(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    accuracy = direct_accuracy_run(BENCHMARK, scratch, tmp_path, COUNT)
    cases = load_preprocessed(stand_in_dir(scratch) / PREPROCESSED_DIR)
    assert len({cases.shape(i) for i in range(COUNT)}) > 1
    logs = tmp_path / "triton"
    with stand_in_server(BENCHMARK, scratch, tmp_path) as flags:
        assert run_benchmark_cli(BENCHMARK, [*accuracy, "--log_dir", str(logs), *flags]) == 0
        # The server holds the volumes itself (staged): requests name them, one per request.
        staged = [*accuracy, "--log_dir", str(tmp_path / "staged"), *flags]
        assert run_benchmark_cli(BENCHMARK, [*staged, "--triton_samples", "staged"]) == 0
    direct = accuracy_log(tmp_path / "direct", COUNT)
    assert accuracy_log(logs, COUNT) == direct
    assert accuracy_log(tmp_path / "staged", COUNT) == direct
    # Each answer is the labels of its whole padded volume, one byte a voxel.
    for index, data in direct.items():
        assert len(data) // 2 == int(np.prod(cases.shape(index)))
    record = json.loads((logs / "result.json").read_text())
    direct_record = json.loads((tmp_path / "direct" / "result.json").read_text())
    assert record["accuracy"] == direct_record["accuracy"]
    assert record["triton"]["servers"][0]["completed_samples"] == COUNT
