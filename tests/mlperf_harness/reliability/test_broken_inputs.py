"""Broken or doubtful inputs before a run: one line naming the file and what is wrong (exit 2), or a
clear notice where the run can go on (a damaged calibration cache, an unofficial model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from reliability_support import SHORT_RUN, write_tiny_model

from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.benchmarks.resnet50.generate_engines import main as generate_engines
from mlperf_harness.benchmarks.resnet50.resources import default_model_path
from mlperf_harness.cli.main import run_benchmark_cli


def _run(argv: list[str], tmp_path: Path) -> int:
    scratch = ["--scratch_path", str(tmp_path / "scratch"), "--log_dir", str(tmp_path / "logs")]
    return run_benchmark_cli(BENCHMARK, [*argv, *scratch, *SHORT_RUN])


def _error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("resnet50: error:")]


@pytest.mark.parametrize(
    ("broken", "what"),
    [
        ("empty", "is empty (0 bytes)"),
        ("two_bytes", "holds no ONNX graph"),  # parses, as a model without a graph
        ("cut_in_the_middle", "is not an ONNX model, or a corrupt or truncated one"),
        ("ir_version_99", "has ONNX IR version 99, newer than this harness reads"),
    ],
)
def test_a_broken_model_file_is_one_line_naming_it(
    broken: str,
    what: str,
    tiny_model: Path,
    images: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = tmp_path / f"{broken}.onnx"
    whole = tiny_model.read_bytes()
    cut = {"empty": 0, "two_bytes": 2, "cut_in_the_middle": len(whole) // 2}
    if broken in cut:
        model.write_bytes(whole[: cut[broken]])
    else:
        write_tiny_model(model, ir_version=99)
    assert _run(["--model_path", str(model), "--data_dir", str(images)], tmp_path) == 2
    (line,) = _error_lines(capsys)
    assert line.startswith(f"resnet50: error: model {model} {what}")


def test_an_empty_image_is_one_line_naming_it(
    tiny_model: Path, images: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "images"
    shutil.copytree(images, data)
    empty = data / "ILSVRC2012_val_00000007.JPEG"
    empty.write_bytes(b"")
    assert _run(["--model_path", str(tiny_model), "--data_dir", str(data)], tmp_path) == 2
    assert _error_lines(capsys) == [f"resnet50: error: image file is empty (0 bytes): {empty}"]


def test_count_beyond_the_data_set_is_refused(
    tiny_model: Path, images: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--model_path", str(tiny_model), "--data_dir", str(images), "--count", "41"]
    assert _run([*argv, "--test_mode", "AccuracyOnly"], tmp_path) == 2
    (line,) = _error_lines(capsys)
    assert "--count 41 is more than the 40 images" in line
    assert not (tmp_path / "scratch" / "engines").exists()  # refused before any preparation


def test_a_model_at_the_default_path_failing_the_checksum_is_flagged(
    tiny_model: Path, images: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = default_model_path(tmp_path / "scratch")
    model.parent.mkdir(parents=True)
    shutil.copyfile(tiny_model, model)
    assert _run(["--data_dir", str(images), "--backend", "null"], tmp_path) == 0
    err = capsys.readouterr().err
    warning = [line for line in err.splitlines() if "WARNING" in line]
    assert len(warning) == 1 and str(model) in warning[0]
    assert "fails the official checksum" in warning[0]
    assert "not valid MLPerf results" in warning[0]
    result = json.loads((tmp_path / "logs" / "result.json").read_text())
    assert result["provenance"]["model"].startswith("model failing the official checksum")


def test_a_damaged_calibration_cache_is_recomputed_with_a_notice(
    tiny_model: Path, images: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = tmp_path / "scratch"
    argv = ["--model_path", str(tiny_model), "--data_dir", str(images), "--precision", "int8"]
    argv += ["--scratch_path", str(scratch)]
    assert generate_engines(argv) == 0
    (cache,) = (scratch / "engines" / "calibration").rglob("*.json")
    good = json.loads(cache.read_text())
    (engine,) = (scratch / "engines" / "resnet50").glob("onnxruntime-int8-*")
    for damage in (cache.read_bytes()[:100], b"", b'{"calibration_method": 0, "data": {}}'):
        cache.write_bytes(damage)
        shutil.rmtree(engine)  # an engine rebuilt for another reason reads the cache
        capsys.readouterr()
        assert generate_engines(argv) == 0
        err = capsys.readouterr().err
        notices = [line for line in err.splitlines() if "calibration cache" in line]
        assert len(notices) == 1 and f"calibration cache {cache} is damaged" in notices[0]
        assert "Traceback" not in err
        assert json.loads(cache.read_text()) == good
