"""GPT-J's --fp8_activations (row or static) as a run takes it, without torch or a GPU: the settings
registry's checks (shown as the command line's on an H200's config; refused by another benchmark,
by GPT-J's onnxruntime backend and as a value outside its choices), static without --precision fp8
refused in one line before anything is written, and the stand-in's own calibration articles apart
from its training pairs and the held-out articles it is scored on."""

from __future__ import annotations

from pathlib import Path

import pytest
from owned_settings import check_owned_setting

from mlperf_harness.benchmarks.gptj.benchmark import BENCHMARK
from mlperf_harness.benchmarks.gptj.build_stand_in_model import TRAIN_SEED, held_out_samples
from mlperf_harness.benchmarks.gptj.calibration import (
    CALIBRATION_FILE_NAME,
    CALIBRATION_SEED,
    official_calibration,
)
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples
from mlperf_harness.engines.torch_gptj.calibration_set import CALIBRATION_COUNT
from mlperf_harness.errors import HarnessError


def test_the_setting_is_gptjs_on_torch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    check_owned_setting(capsys, tmp_path, BENCHMARK, "fp8_activations", ("static", "row"),
                        "tensor", "row, static")  # fmt: skip


def test_static_without_fp8_weights_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from one_line_errors import one_error_line

    from mlperf_harness.benchmarks.gptj.real_size import main as real_size_main

    assert real_size_main(["--out", str(tmp_path / "6b")]) == 0
    capsys.readouterr()
    log_dir = tmp_path / "log"
    argv = ["--scratch_path", str(tmp_path / "scratch"), "--log_dir", str(log_dir),
            "--model_path", str(tmp_path / "6b"), "--backend", "torch", "--precision", "fp16",
            "--fp8_activations", "static"]  # fmt: skip
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    line = one_error_line(capsys.readouterr().err, "gptj")
    assert "--fp8_activations static needs --precision fp8" in line and "not fp16" in line
    assert not log_dir.exists()


def test_the_stand_ins_calibration_articles_are_neither_trained_on_nor_scored() -> None:
    own = {s.article for s in generate_samples(CALIBRATION_COUNT, seed=CALIBRATION_SEED)}
    assert len(own) == CALIBRATION_COUNT
    assert not own & {s.article for s in generate_samples(150, seed=TRAIN_SEED)}
    assert not own & {s.article for s in held_out_samples(60)}


def test_the_official_calibration_set_missing_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError) as raised:
        official_calibration(tmp_path, None)  # type: ignore[arg-type]  # refused before it is read
    message = str(raised.value)
    assert "\n" not in message and f"no {tmp_path / CALIBRATION_FILE_NAME}" in message
    assert "prepare-calibration.py" in message
