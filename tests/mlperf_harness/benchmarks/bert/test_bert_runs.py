"""BERT through the real harness: the stand-in built from nothing, an accuracy run scored by our
SQuAD scorer, short performance runs that LoadGen judges; and the inputs a user can get wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.bert import resources
from mlperf_harness.benchmarks.bert.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.config.measured_rates import MEASURED_SOURCES
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.run_files import ACCURACY_TXT, RESULT_FILE


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch")


def _run(scratch: Path, log_dir: Path, *flags: str) -> dict[str, object]:
    argv = ["--scratch_path", str(scratch), "--log_dir", str(log_dir), *flags]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    record: dict[str, object] = json.loads((log_dir / RESULT_FILE).read_text())
    return record


# The stand-in's build (about a minute here) and its runs: CI's slow set (tests/conftest.py).
@pytest.mark.slow
def test_the_stand_in_answers_its_questions_and_runs_every_scenario(
    scratch: Path, tmp_path: Path
) -> None:
    accuracy = _run(
        scratch, tmp_path / "acc", "--scenario", "Offline", "--test_mode", "AccuracyOnly"
    )
    assert accuracy["stand_in"] is True
    entry = accuracy["accuracy"]
    assert isinstance(entry, dict)
    assert entry["passed"] is True and entry["f1"] >= 95.0
    assert '"f1": ' in (tmp_path / "acc" / ACCURACY_TXT).read_text()
    # The int8 engine (MatMuls quantized, calibrated on the stand-in's training questions) keeps
    # 99% of fp32's F1, as bert-99 needs; its logs are fp16 here, NVIDIA's layout.
    int8 = _run(
        scratch,
        tmp_path / "int8",
        *("--scenario", "Offline", "--test_mode", "AccuracyOnly", "--precision", "int8"),
        *("--output_dtype", "float16"),
    )
    int8_entry = int8["accuracy"]
    assert isinstance(int8_entry, dict) and int8["output_dtype"] == "float16"
    assert int8_entry["f1"] >= 0.99 * entry["f1"]
    # The rates are timed at start on this machine, whatever its speed.
    for scenario in ("Offline", "SingleStream"):
        result = _run(
            scratch, tmp_path / scenario, "--scenario", scenario, "--min_duration_ms", "2000"
        )
        assert result["result_valid"] is True, (scenario, result["invalid_reasons"])
        settings = result["settings"]
        assert isinstance(settings, dict)
        rate = (
            "offline_expected_qps" if scenario == "Offline" else "single_stream_expected_latency_ns"
        )
        # (Offline's by a first attempt that ended early, where the machine was busier while the
        # engine was timed at start than during the run: rates.md)
        assert settings[rate]["from"] in MEASURED_SOURCES


@pytest.mark.slow
def test_over_triton_the_accuracy_log_is_the_direct_harness_s(
    scratch: Path, tmp_path: Path
) -> None:
    # A local server (python_backend) holding the samples: requests carry feature indices, and the
    # answers come back cut to each feature's real length on this side, as the direct harness's.
    accuracy = ["--scenario", "Offline", "--test_mode", "AccuracyOnly"]
    _run(scratch, tmp_path / "direct", *accuracy)
    over = _run(
        scratch, tmp_path / "triton", *accuracy,
        *("--harness", "triton", "--triton_samples", "staged"),
    )  # fmt: skip
    assert over["harness"] == "triton"
    logs = [
        json.loads((tmp_path / name / ACCURACY_FILE).read_text()) for name in ("direct", "triton")
    ]
    direct, triton = ({entry["qsl_idx"]: entry["data"] for entry in log} for log in logs)
    assert len(direct) == len(logs[0]) and direct == triton


def test_a_model_that_is_not_bert_is_one_line(tmp_path: Path) -> None:
    not_a_model = tmp_path / "model.onnx"
    not_a_model.write_bytes(b"not onnx")
    (tmp_path / resources.VOCAB_FILE_NAME).write_text("[PAD]\n")
    with pytest.raises(HarnessError, match="is not an ONNX model"):
        resources.choose_model(not_a_model, tmp_path / "scratch")


def test_a_model_without_its_vocabulary_is_one_line(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"")
    with pytest.raises(HarnessError, match=r"no vocab.txt beside .*model.onnx"):
        resources.choose_model(model, tmp_path)
    with pytest.raises(HarnessError, match="model not found"):
        resources.choose_model(tmp_path / "absent.onnx", tmp_path)
