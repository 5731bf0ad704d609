"""RetinaNet through the real harness on its stand-in: built from nothing, an accuracy run in fp32
whose mAP passes against the build's own, the same in int8 (an ONNX Runtime QDQ engine calibrated on
the stand-in's calibration split, which the run's record names, its class logits left in fp32)
scoring close to fp32, and
a precision the CPU has no engine for refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from mlperf_harness.benchmarks.retinanet import stand_in
from mlperf_harness.benchmarks.retinanet.benchmark import BENCHMARK
from mlperf_harness.benchmarks.retinanet.engines import CALIBRATED
from mlperf_harness.benchmarks.retinanet.quantization import class_logit_convolutions
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.records import read_record
from mlperf_harness.run_files import RESULT_FILE


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch")


def _accuracy(scratch: Path, log_dir: Path, *flags: str) -> dict[str, object]:
    argv = [
        "--scratch_path",
        str(scratch),
        "--log_dir",
        str(log_dir),
        "--test_mode",
        "AccuracyOnly",
    ]
    assert run_benchmark_cli(BENCHMARK, [*argv, *flags]) == 0
    record: dict[str, object] = json.loads((log_dir / RESULT_FILE).read_text())
    return record


# The stand-in's build (a minute or two here) and an int8 calibration: CI's slow set.
@pytest.mark.slow
def test_fp32_and_int8_accuracy_runs_on_the_stand_in(scratch: Path, tmp_path: Path) -> None:
    fp32 = _accuracy(scratch, tmp_path / "fp32")
    assert fp32["stand_in"] is True and fp32["round"] == "v6.0"
    built = read_record(
        stand_in.StandInRecord, stand_in.stand_in_dir(scratch) / stand_in.RECORD_FILE_NAME
    )
    assert built is not None
    entry = fp32["accuracy"]
    assert isinstance(entry, dict) and entry["passed"] is True
    assert abs(entry["map_percent"] - built.heldout_map_percent) < 0.01 * built.heldout_map_percent

    int8 = _accuracy(scratch, tmp_path / "int8", "--precision", "int8")
    provenance = int8["provenance"]
    assert isinstance(provenance, dict)
    assert provenance["calibration"] == "the stand-in's own calibration split of generated pictures"
    assert provenance["engine"] != fp32["provenance"]["engine"]  # type: ignore[index]
    # Every convolution is int8 (its weight dequantized) but the class logits'.
    engine = onnx.load(str(provenance["engine"]), load_external_data=False).graph
    dequantized = {
        out for node in engine.node if node.op_type == "DequantizeLinear" for out in node.output
    }
    int8_convs = {
        node.name for node in engine.node if node.op_type == "Conv" and node.input[1] in dequantized
    }
    fp32_convs = {node.name for node in engine.node if node.op_type == "Conv"} - int8_convs
    model = stand_in.stand_in_dir(scratch) / stand_in.MODEL_FILE_NAME
    assert fp32_convs == set(class_logit_convolutions(model)) and int8_convs
    # Int8 close to fp32, not its 99% verdict: that verdict turns on the draw of calibration
    # pictures (99.1% with the stand-in's, 90-101% with other draws: docs/retinanet.md) and the
    # fitted stand-in differs with each CPU's floating point, so a verdict asserted here would
    # pass on one machine and fail on another. A broken quantization scores far below 85%.
    int8_entry = int8["accuracy"]
    assert isinstance(int8_entry, dict) and isinstance(int8_entry["passed"], bool)
    assert int8_entry["map_percent"] >= 0.85 * entry["map_percent"]


def test_a_precision_onnxruntime_has_no_engine_for_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--precision", "fp16", "--log_dir", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "on onnxruntime is fp32 or int8, not fp16" in err[-1]
    assert not (tmp_path / "stand_in").exists()  # refused before anything was built


@pytest.mark.parametrize(
    ("backend", "precision", "refusal"),
    [
        ("onnxruntime", "fp8", "on onnxruntime is fp32 or int8, not fp8"),
        ("torch", "int8", "torch engine is built in fp16, fp32, fp8, not 'int8'"),
    ],
)
def test_fp8_is_the_torch_backend_s_and_other_refusals_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, precision: str, refusal: str
) -> None:
    argv = ["--scratch_path", str(tmp_path), "--log_dir", str(tmp_path)]
    argv += ["--backend", backend, "--precision", precision]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and refusal in err[-1]
    assert not (tmp_path / "stand_in").exists()  # refused before anything was built
    # fp8 is calibrated on torch, as int8 on onnxruntime (on the same pictures).
    assert ("torch", "fp8") in CALIBRATED and ("onnxruntime", "int8") in CALIBRATED
