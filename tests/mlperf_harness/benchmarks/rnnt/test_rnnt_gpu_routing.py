"""RNN-T's GPU path as far as it goes without a GPU: the GPU systems' configs (torch, fp16, samples
in GPU memory, no written rate), the real-size stand-in routed past the model-directory check (a
whole run of it on the null backend), and one line for each thing the GPU path refuses: the
real-size stand-in on ONNX Runtime or in an accuracy run, a damaged marker, the checkpoint on ONNX
Runtime, a model directory without weights.npz, the torch backend on a host without torch."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.benchmarks.rnnt import configs
from mlperf_harness.benchmarks.rnnt.benchmark import BENCHMARK
from mlperf_harness.benchmarks.rnnt.model_files import RnntModelFiles, write_model_files
from mlperf_harness.benchmarks.rnnt.onnx_graphs import rnnt_models
from mlperf_harness.benchmarks.rnnt.real_size import MARKER, find_real_size
from mlperf_harness.benchmarks.rnnt.real_size import main as real_size_main
from mlperf_harness.benchmarks.rnnt.topology import RnntSizes
from mlperf_harness.benchmarks.rnnt.weights import seeded_weights
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.errors import HarnessError

TINY = RnntSizes(encoder_hidden=16, prediction_hidden=8, joint_hidden=12)
SHORT = ["--min_duration_ms", "200", "--min_query_count", "4"]


def _real_size(directory: Path, samples: int = 24) -> Path:
    assert real_size_main(["--out", str(directory), "--samples", str(samples)]) == 0
    return directory


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line (a run may say what it runs on before it fails)."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("rnnt: error: ")]
    assert len(errors) == 1 and err[-1] == errors[0], err
    return errors[0]


@pytest.mark.parametrize("system", ["H200-SXM-141GBx1", "H100-SXM-80GBx8", "H200-SXM-141GBx4"])
def test_gpu_systems_run_torch_from_device_and_time_their_engine(
    system: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert system in configs.GPU_SYSTEMS
    argv = ["--show_config", "--system_name", system, "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--scenario", "Offline"]) == 0
    out = capsys.readouterr().out
    assert "backend = 'torch'" in out and "precision = 'fp16'" in out
    assert "start_from_device = True" in out and "batch_size = 1024" in out
    assert "gpu_inference_streams = 4" in out and "loadgen_path = 'native'" in out
    if system == "H200-SXM-141GBx1":  # the one system whose rates are measured
        assert "offline_expected_qps = 18345.0" in out
    else:
        assert (
            "offline_expected_qps = (timed at start: no config for this system and engine sets it)"
            in out
        )
    assert run_benchmark_cli(BENCHMARK, [*argv, "--scenario", "Server"]) == 0
    out = capsys.readouterr().out
    # Offline's batch from length-range queues, as many more as the system has GPUs.
    gpus = int(system.rsplit("x", 1)[1])
    assert "batch_size = 1024" in out and "server_batch_timeout_us = 350000" in out
    assert f"server_length_buckets = {configs.SERVER_BUCKETS_PER_GPU * gpus}" in out
    if system == "H200-SXM-141GBx1":  # its Server rate is measured too
        assert "server_target_qps = 16450.0" in out
    else:
        assert "server_target_qps = (timed at start" in out


def test_real_size_stand_in_draws_its_utterances(tmp_path: Path) -> None:
    real = find_real_size(_real_size(tmp_path, samples=40))
    assert real is not None and real.samples == 40 and 0 < real.symbols_per_frame <= 1
    utterances = real.utterances()
    assert utterances.features.shape[0] == 40 and utterances.features.shape[2] == 240
    # 1-15 s of audio: 34-500 feature frames (30 ms each), the padding zeros
    assert utterances.lengths.min() >= 33 and utterances.lengths.max() <= 500
    row = int(np.argmin(utterances.lengths))
    assert not utterances.features[row, utterances.lengths[row] :].any()
    again = real.utterances()
    assert np.array_equal(again.features, utterances.features)  # seeded


def test_real_size_runs_past_the_model_directory_check(tmp_path: Path) -> None:
    real = _real_size(tmp_path / "real")
    logs = tmp_path / "logs"
    argv = ["--backend", "null", "--model_path", str(real), "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--log_dir", str(logs), *SHORT]) == 0
    (result_file,) = logs.rglob("result.json")
    result = json.loads(result_file.read_text())
    assert result["stand_in"] is True
    assert "forced" in json.dumps(result).lower()  # the run says its emissions are forced


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--backend", "onnxruntime"], "runs on --backend torch, not onnxruntime"),
        (["--backend", "null", "--test_mode", "AccuracyOnly"], "has no accuracy"),
    ],
)
def test_real_size_refusals_are_one_line(
    flags: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _real_size(tmp_path / "real")
    argv = ["--model_path", str(real), "--scratch_path", str(tmp_path), *flags]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    assert says in _one_error_line(capsys)


def test_a_damaged_marker_is_one_line(tmp_path: Path) -> None:
    (tmp_path / MARKER).write_text('{"samples": 3}')
    with pytest.raises(HarnessError, match="not a real-size stand-in's marker"):
        find_real_size(tmp_path)


def test_the_checkpoint_on_onnxruntime_says_to_convert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = tmp_path / "rnnt.pt"
    checkpoint.write_bytes(b"not read on this path")
    argv = ["--model_path", str(checkpoint), "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--backend", "onnxruntime"]) != 0
    assert "download_model -- --convert" in _one_error_line(capsys)


def test_a_model_directory_without_weights_is_one_line(tmp_path: Path) -> None:
    weights = seeded_weights(TINY, 1)
    files = write_model_files(
        tmp_path, rnnt_models(weights, TINY, "t", {}), weights, TINY, True, "t"
    )
    assert RnntModelFiles.read(tmp_path).weights().keys() == weights.keys()
    files.weights_file.unlink()
    with pytest.raises(HarnessError, match=r"lacks weights\.npz"):
        RnntModelFiles.read(tmp_path).weights()


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None,
    reason="checks the message on hosts without torch",
)
def test_the_torch_backend_without_torch_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _real_size(tmp_path / "real")
    argv = ["--backend", "torch", "--model_path", str(real), "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, [*argv, "--precision", "fp16", *SHORT]) != 0
    assert "the torch backend needs PyTorch" in _one_error_line(capsys)
    # fp16 is the engine's only precision: the CPU configs' fp32 is refused first, in one line.
    assert run_benchmark_cli(BENCHMARK, [*argv, *SHORT]) != 0
    assert "runs in fp16 (torch_engine.py), not --precision fp32" in _one_error_line(capsys)
