"""3D-UNet through the harness: the CPU window runner on a real (random, 1/16-width) U-Net with
ONNX Runtime, and the whole benchmark on its stand-in (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner
from mlperf_harness.benchmarks.unet3d import stand_in_model
from mlperf_harness.benchmarks.unet3d.benchmark import BENCHMARK
from mlperf_harness.benchmarks.unet3d.sliding_window import sliding_window_labels
from mlperf_harness.benchmarks.unet3d.window_runner import SlidingWindowRunner
from mlperf_harness.cli.main import run_benchmark_cli


@pytest.fixture(scope="module")
def tiny_unet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    width = stand_in_model.UNetWidth(16)
    weights = stand_in_model.random_weights(width, seed=1)
    rng = np.random.default_rng(2)
    weights["output/weight"] = rng.standard_normal(weights["output/weight"].shape).astype(
        np.float32
    )
    path = tmp_path_factory.mktemp("unet") / "unet.onnx"
    onnx.save(stand_in_model.unet_model(weights, width, "test", {}), str(path))
    return path


def test_window_runner_answers_each_volume_with_its_labels(tiny_unet: Path) -> None:
    rng = np.random.default_rng(3)
    volume = rng.standard_normal((1, 1, 128, 128, 192)).astype(np.float32)
    windows = OnnxRuntimeRunner(tiny_unet, stand_in_model.OUTPUT_NAME)
    with SlidingWindowRunner(windows, window_batch=2) as runner:
        rows = runner.infer(volume)
        with OnnxRuntimeRunner(tiny_unet, stand_in_model.OUTPUT_NAME) as direct:
            expected = sliding_window_labels(
                volume[0], lambda w: np.asarray(direct.infer(w), np.float32), batch_size=1
            )
    assert rows.shape == (1, 128 * 128 * 192) and rows.dtype == np.uint8
    np.testing.assert_array_equal(rows[0], expected.ravel())
    assert len(np.unique(rows)) > 1  # a real segmentation, not one class everywhere


@pytest.mark.slow
def test_stand_in_accuracy_run_scores_what_the_build_measured(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    flags = ["--scratch_path", str(tmp_path / "scratch"), "--log_dir", str(logs)]
    status = run_benchmark_cli(
        BENCHMARK, ["--scenario", "Offline", "--test_mode", "AccuracyOnly", *flags]
    )
    assert status == 0
    result = json.loads((logs / "result.json").read_text())
    accuracy = result["accuracy"]
    record = json.loads(
        next((tmp_path / "scratch" / "stand_in" / "unet3d").glob("*/stand_in.json")).read_text()
    )
    assert accuracy["passed"] and accuracy["cases"] == accuracy["total_cases"]
    assert accuracy["mean_dice"] == pytest.approx(record["heldout_mean_dice"], abs=1e-5)
    assert "Accuracy: mean = " in (logs / "accuracy.txt").read_text()
    assert result["stand_in"]
