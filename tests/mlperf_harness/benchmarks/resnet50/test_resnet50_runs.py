"""ResNet-50 through the real harness, LoadGen and ONNX Runtime, on the shared small stand-in
(tests/shared_stand_in.py: built once per machine, reduced image counts); the full default build
and its >= 90% top-1 are tested in test_stand_in_model.py. The runs share one scratch directory, so
preprocessing and the engine build happen once for the whole file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from shared_stand_in import SharedStandIn, shared_stand_in

from mlperf_harness.accuracy.imagenet import main as accuracy_main
from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.benchmarks.resnet50.generate_engines import main as generate_engines_main
from mlperf_harness.benchmarks.resnet50.resources import STAND_IN_REPORT, StandInRecord
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.datasets.imagenet.layout import parse_val_map
from mlperf_harness.datasets.imagenet.transform import preprocess_file
from mlperf_harness.records import read_record


@pytest.fixture(scope="module")
def stand_in() -> SharedStandIn:
    return shared_stand_in()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scratch for every run of this file: its preprocessed samples and engine are reused."""
    return tmp_path_factory.mktemp("scratch")


def _run(stand_in: SharedStandIn, scratch: Path, tmp_path: Path, *extra: str) -> int:
    return run_benchmark_cli(
        BENCHMARK,
        [
            "--model_path", str(stand_in.model),
            "--data_dir", str(stand_in.images),
            "--scratch_path", str(scratch),
            "--log_dir", str(tmp_path / "logs"),
            *extra,
        ],
    )  # fmt: skip


SHORT = ["--min_duration_ms", "300", "--min_query_count", "8"]


# Offline in the developer loop; the other scenarios' paths are the harness_overhead tests' too.
@pytest.mark.parametrize(
    "scenario",
    [
        "Offline",
        pytest.param("Server", marks=pytest.mark.slow),
        pytest.param("SingleStream", marks=pytest.mark.slow),
        pytest.param("MultiStream", marks=pytest.mark.slow),
    ],
)
def test_every_scenario_writes_result_json(
    scenario: str,
    stand_in: SharedStandIn,
    scratch: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    extra = ["--scenario", scenario, *SHORT]
    if scenario == "Server":
        extra += ["--server_target_qps", "5"]
    assert _run(stand_in, scratch, tmp_path, *extra) == 0
    result = json.loads((tmp_path / "logs" / "result.json").read_text())
    assert result["benchmark"] == "resnet50" and result["scenario"] == scenario
    assert result["test_mode"] == "PerformanceOnly" and result["backend"] == "onnxruntime"
    assert result["stand_in"] is True and result["notice"] == "stand-in: not a valid MLPerf result"
    record = read_record(StandInRecord, stand_in.model.parent / STAND_IN_REPORT)
    assert record is not None and result["model_sha256"] == record.sha256
    assert isinstance(result["result_valid"], bool)
    assert isinstance(result["invalid_reasons"], list)
    assert {"p50", "p90", "p99"} <= set(result["latency_ns"])
    if scenario == "Server":
        assert result["completed_samples_per_second"] > 0
        assert result["scheduled_samples_per_second"] > 0
    elif scenario != "MultiStream":
        assert result["samples_per_second"] > 0
    assert "stand-in: not a valid MLPerf result" in capsys.readouterr().out


def _direct_predictions(stand_in: SharedStandIn, count: int) -> list[int]:
    """Labels predicted by ONNX Runtime called directly, without the harness or LoadGen."""
    entries = parse_val_map(stand_in.images / "val_map.txt")[:count]
    batch = np.stack([preprocess_file(stand_in.images / name) for name, _ in entries])
    session = ort.InferenceSession(str(stand_in.model), providers=["CPUExecutionProvider"])
    (argmax,) = session.run([stand_in_model.ARGMAX_OUTPUT], {stand_in_model.INPUT_NAME: batch})
    return [int(i) - stand_in_model.LABEL_OFFSET for i in argmax]


# --no-end_on_device: the runner returns the softmax rows and the argmax is taken on the host.
@pytest.mark.slow
@pytest.mark.parametrize("end_on_device", ["--end_on_device", "--no-end_on_device"])
def test_accuracy_matches_direct_inference(
    end_on_device: str, stand_in: SharedStandIn, scratch: Path, tmp_path: Path
) -> None:
    count = 12  # a few batches: each sample is a full ResNet-50 inference on the CPU
    args = ["--test_mode", "AccuracyOnly", "--count", str(count), end_on_device]
    assert _run(stand_in, scratch, tmp_path, *args) == 0
    logs = tmp_path / "logs"
    labels = [label for _, label in parse_val_map(stand_in.images / "val_map.txt")[:count]]
    direct = _direct_predictions(stand_in, count)
    good = sum(p == t for p, t in zip(direct, labels, strict=True))
    result = json.loads((logs / "result.json").read_text())
    accuracy = result["accuracy"]
    assert (accuracy["good"], accuracy["total"]) == (good, count)
    assert (logs / "accuracy.txt").read_text() == (
        f"accuracy={100.0 * good / count:.3f}%, good={good}, total={count}\n"
    )
    # The accuracy log holds each prediction as int32 at the start of the response data.
    entries = json.loads((logs / "mlperf_log_accuracy.json").read_text())
    logged = {
        e["qsl_idx"]: int(np.frombuffer(bytes.fromhex(e["data"])[:4], np.int32)[0]) for e in entries
    }
    assert [logged[i] for i in range(count)] == direct
    assert accuracy["target_percent"] == pytest.approx(accuracy["reference_top1_percent"] * 0.99)


@pytest.mark.slow
def test_accuracy_target_rescores_a_log(
    stand_in: SharedStandIn, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(stand_in, scratch, tmp_path, "--test_mode", "AccuracyOnly", "--count", "16") == 0
    logs = tmp_path / "logs"
    capsys.readouterr()
    argv = ["--mlperf_accuracy_file", str(logs / "mlperf_log_accuracy.json")]
    argv += ["--val_map", str(stand_in.images / "val_map.txt"), "--count", "16"]
    assert accuracy_main(argv) == 0
    assert capsys.readouterr().out == (logs / "accuracy.txt").read_text()
    assert accuracy_main(["--mlperf_accuracy_file", str(logs / "nope.json"), *argv[2:]]) == 2
    assert "cannot read LoadGen accuracy log" in capsys.readouterr().err


@pytest.mark.slow
def test_submission_run_scores_accuracy_and_performance(
    stand_in: SharedStandIn, scratch: Path, tmp_path: Path
) -> None:
    argv = ["--scenario", "Offline", "--test_mode", "SubmissionRun", *SHORT]
    assert _run(stand_in, scratch, tmp_path, *argv) == 0
    result = json.loads((tmp_path / "logs" / "result.json").read_text())
    assert result["accuracy"]["total"] == 40
    assert result["samples_per_second"] > 0


def test_missing_model_is_one_line(
    stand_in: SharedStandIn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_benchmark_cli(
        BENCHMARK, ["--model_path", str(tmp_path / "none.onnx"), "--log_dir", str(tmp_path / "l")]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith("resnet50: error: model not found:")


def test_not_an_onnx_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"definitely not protobuf")
    code = run_benchmark_cli(BENCHMARK, ["--model_path", str(bogus), "--log_dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "not an ONNX model" in err


def test_corrupt_jpeg_is_named(
    stand_in: SharedStandIn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "val_map.txt").write_text("good.JPEG 1\nbroken.JPEG 2\n")
    (images / "good.JPEG").write_bytes(
        (stand_in.images / parse_val_map(stand_in.images / "val_map.txt")[0][0]).read_bytes()
    )
    (images / "broken.JPEG").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    code = run_benchmark_cli(
        BENCHMARK,
        [
            "--model_path", str(stand_in.model), "--data_dir", str(images),
            "--scratch_path", str(tmp_path / "scratch"), "--log_dir", str(tmp_path / "logs"),
        ],
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "broken.JPEG" in err


def test_wrong_backend_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    code = run_benchmark_cli(
        BENCHMARK, ["--backend", "tpu", "--scratch_path", str(scratch), "--log_dir", str(tmp_path)]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == (
        "resnet50: error: unknown backend 'tpu': choose one of null, onnxruntime, sim, tensorrt, torch"
    )
    assert not scratch.exists()  # no stand-in was built for a run that cannot start


@pytest.mark.slow
def test_generate_engines_then_the_run_uses_the_same_engine(
    stand_in: SharedStandIn, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engines = tmp_path / "engines"
    argv = ["--precision", "fp32", "--model_path", str(stand_in.model)]
    argv += ["--data_dir", str(stand_in.images), "--scratch_path", str(tmp_path / "scratch")]
    argv += ["--engine_dir", str(engines)]
    assert generate_engines_main(argv) == 0
    assert "[built]" in capsys.readouterr().out
    assert generate_engines_main(argv) == 0
    assert "[cached (inputs unchanged)]" in capsys.readouterr().out
    assert _run(stand_in, scratch, tmp_path, "--engine_dir", str(engines), *SHORT) == 0
    result = json.loads((tmp_path / "logs" / "result.json").read_text())
    [engine] = engines.glob("resnet50/onnxruntime-fp32-*/model_fp32_opt.onnx")
    assert result["provenance"]["engine"] == str(engine)


def test_show_config_prepares_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The H200's config picks the torch backend, which this machine lacks: nothing may be built.
    argv = ["--scratch_path", str(tmp_path / "scratch"), "--system_name", "H200-SXM-141GBx1"]
    argv += ["--scenario", "Server", "--batch_size", "64", "--show_config"]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    out = capsys.readouterr().out
    assert "backend = 'torch'  # mlperf_harness.config.gpu.TorchOnGPU" in out
    assert "batch_size = 64  # command line" in out
    assert not (tmp_path / "scratch").exists()
