"""SDXL's command line: bad inputs give one line and a non-zero exit; the stand-in runs end to end
(slow: it builds the stand-in, about 20 s on two cores, and generates every image)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.benchmarks.sdxl.benchmark import BENCHMARK
from mlperf_harness.benchmarks.sdxl.pipeline import MODEL_FILES
from mlperf_harness.benchmarks.sdxl.resources import MERGES
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.datasets.clip_bpe import merges_bytes, train_merges


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _model_and_data(tmp_path: Path, captions: int) -> tuple[Path, Path]:
    """A model directory of the ONNX interface (files present, never loaded: the run stops before)
    and a data directory of `captions` captions without latents."""
    model = tmp_path / "model"
    for name in MODEL_FILES:
        (model / name).parent.mkdir(parents=True, exist_ok=True)
        (model / name).write_bytes(b"")
    for merges in MERGES:
        (model / merges).parent.mkdir(parents=True, exist_ok=True)
        (model / merges).write_bytes(merges_bytes(train_merges(["a cat"], 3)))
    data = tmp_path / "data"
    (data / "captions").mkdir(parents=True)
    rows = "".join(f"{i}\tA cat number {i}.\n" for i in range(captions))
    (data / "captions" / "captions.tsv").write_text("id\tcaption\n" + rows)
    return model, data


def test_a_caption_list_of_the_wrong_length_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, data = _model_and_data(tmp_path, 3)
    (data / "latents").mkdir()
    np.save(data / "latents" / "latents.npy", np.zeros((1, 4, 128, 128), np.float32))
    argv = ["--model_path", str(model), "--data_dir", str(data), "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    assert "holds 3 captions where 5000 are expected" in _error(capsys)


def test_a_missing_latents_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, data = _model_and_data(tmp_path, 5000)
    argv = ["--model_path", str(model), "--data_dir", str(data), "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    line = _error(capsys)
    assert "the fixed latents not found" in line and "latents/latents.npy" in line


def test_a_model_directory_without_the_pipeline_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "model").mkdir()
    argv = ["--model_path", str(tmp_path / "model"), "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    assert "is not an SDXL pipeline of this harness's ONNX interface" in _error(capsys)


@pytest.mark.slow
def test_the_stand_in_runs_offline_and_scores_fid_and_clip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "logs"
    argv = [
        "--scratch_path", str(tmp_path / "scratch"), "--test_mode", "AccuracyOnly",
        "--log_dir", str(out),
    ]  # fmt: skip
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    (result_file,) = out.rglob("result.json")
    result = json.loads(result_file.read_text())
    accuracy = result["accuracy"]
    # The harness's images are the pipeline's own: FID and CLIP within the stand-in's ranges
    # around what its build measured by running the pipeline directly.
    assert accuracy["passed"] is True and accuracy["images"] == 64
    line = (result_file.parent / "accuracy.txt").read_text().strip()
    assert re.fullmatch(
        r"Accuracy Results: \{'FID_SCORE': '[\d.e-]+', 'CLIP_SCORE': '-?[\d.e-]+'\}", line
    )
    images = result_file.parent / "images"
    assert sorted(p.name for p in images.iterdir())[:2] == ["0.png", "1.png"]
    assert (images / "captions.txt").read_text().startswith("0  A ")


def test_one_h200_runs_its_measured_rates_and_others_time_theirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def config(system: str, scenario: str = "Offline") -> str:
        argv = ["--show_config", "--system_name", system, "--scratch_path", str(tmp_path)]
        assert run_benchmark_cli(BENCHMARK, [*argv, "--scenario", scenario]) == 0
        return capsys.readouterr().out

    h200 = config("H200-SXM-141GBx1")
    assert "backend = 'torch'" in h200 and "offline_expected_qps = 1.24" in h200
    assert "server_target_qps = 1.12" in config("H200-SXM-141GBx1", "Server")
    assert "offline_expected_qps = (timed at start" in config("H100-SXM-80GBx1")
    assert "server_target_qps = (timed at start" in config("H100-SXM-80GBx1", "Server")
    # --precision fp8 is another engine: the fp16 rates are not its own
    fp8 = ["--system_name", "H200-SXM-141GBx1", "--precision", "fp8", "--show_config"]
    for scenario, rate in (("Offline", "offline_expected_qps"), ("Server", "server_target_qps")):
        argv = [*fp8, "--scenario", scenario, "--scratch_path", str(tmp_path)]
        assert run_benchmark_cli(BENCHMARK, argv) == 0
        shown = capsys.readouterr().out
        assert "precision = 'fp8'" in shown and f"{rate} = (timed at start" in shown


def _refusal(
    backend: str, precision: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    """The one error line of a run on `backend` at `precision`, refused before anything was
    built or written."""
    argv = ["--backend", backend, "--precision", precision, "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    assert not any(tmp_path.iterdir())
    return _error(capsys)


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_the_torch_backend_refuses_a_precision_other_than_fp16_or_fp8(
    precision: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal("torch", precision, tmp_path, capsys).endswith(
        f"error: SDXL's torch backend runs its UNet in fp16 or fp8, not --precision {precision} "
        "(the GPU configs' fp16: pass --precision fp16 or fp8)"
    )


@pytest.mark.parametrize("precision", ["fp16", "fp8", "int8"])
def test_onnxruntime_refuses_a_precision_other_than_fp32(
    precision: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal("onnxruntime", precision, tmp_path, capsys).endswith(
        f"error: stable-diffusion-xl on onnxruntime runs its fp32 graphs, not --precision "
        f"{precision} (fp16 and fp8 are the torch backend's, on a GPU)"
    )
