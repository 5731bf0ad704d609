"""BERT's run variants through the real harness and LoadGen, on a tiny model of the official
interface (1 layer, hidden 32, seeded weights) and a few generated questions: the logged response
type (--output_dtype) and length (each feature's real tokens), --config_ver high_accuracy
(bert-99.9), the int8 engine calibrated on MLPerf's list, and the combinations refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from mlperf_harness.accuracy.squad import score_accuracy_log
from mlperf_harness.benchmarks.bert import stand_in_data
from mlperf_harness.benchmarks.bert import stand_in_model as bert
from mlperf_harness.benchmarks.bert.benchmark import BENCHMARK
from mlperf_harness.benchmarks.bert.calibration import CALIBRATION_LIST
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK as RESNET50
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.cli.options import parse_run_options
from mlperf_harness.cli.run_harness import plan_run, run_variant
from mlperf_harness.datasets.squad.store import SquadDataset, load_preprocessed
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.run_files import RESULT_FILE
from mlperf_harness.submission.benchmark_audit import submission_model
from mlperf_harness.submission.pipeline import SubmissionRequest, plan_benchmarks

TINY = bert.BertShape(layers=1, hidden=32, heads=2, intermediate=64)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(scratch, model, data directory): the tiny model beside the generated vocabulary, and
    a few generated questions with a calibration list naming some of their features."""
    root = tmp_path_factory.mktemp("bert_variants")
    files = stand_in_data.write_stand_in_data(
        root / "data", seed=3, counts=stand_in_data.SquadCounts(train=1, dev=8)
    )
    model_dir = root / "model"
    model_dir.mkdir()
    files.vocab.rename(model_dir / "vocab.txt")
    weights = bert.random_weights(TINY, seed=1)
    weights["span/weight"] = np.random.default_rng(1).normal(size=(32, 2)).astype(np.float32)
    onnx.save(bert.span_model(weights, TINY, seed=1, metadata={}), str(model_dir / "model.onnx"))
    (root / "data" / CALIBRATION_LIST).write_text("0\n2\n4\n")
    return root / "scratch", model_dir / "model.onnx", root / "data"


def _run(inputs: tuple[Path, Path, Path], log_dir: Path, *flags: str) -> dict[str, object]:
    scratch, model, data = inputs
    argv = [
        *("--scratch_path", str(scratch), "--model_path", str(model), "--data_dir", str(data)),
        *("--log_dir", str(log_dir), "--test_mode", "AccuracyOnly", *flags),
    ]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    record: dict[str, object] = json.loads((log_dir / RESULT_FILE).read_text())
    return record


def _dataset(record: dict[str, object]) -> SquadDataset:
    provenance = record["provenance"]
    assert isinstance(provenance, dict)
    return load_preprocessed(Path(provenance["preprocessed"]))


def test_fp16_and_fp32_logs_hold_each_features_real_tokens(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    fp32 = _run(inputs, tmp_path / "fp32")
    fp16 = _run(inputs, tmp_path / "fp16", "--output_dtype", "float16")
    assert (fp32["output_dtype"], fp16["output_dtype"]) == ("float32", "float16")
    assert fp16["config_ver"] == "default" and fp16["submission_model"] == "bert-99"
    features = _dataset(fp32).features
    logs = {
        dtype: {r.qsl_idx: r.data for r in read_accuracy_log(tmp_path / dtype / ACCURACY_FILE)}
        for dtype in ("fp32", "fp16")
    }
    assert sorted(logs["fp32"]) == list(range(len(features)))
    # Short contexts leave padding (long ones fill their windows).
    assert min(features.token_count(i) for i in logs["fp32"]) < bert.SEQ_LENGTH // 2
    for index, data in logs["fp32"].items():
        tokens = features.token_count(index)
        assert len(data) == tokens * 2 * 4
        assert len(logs["fp16"][index]) == tokens * 2 * 2
        as_fp16 = np.frombuffer(data, np.float32).astype(np.float16)
        assert np.array_equal(as_fp16, np.frombuffer(logs["fp16"][index], np.float16))
    for record in (fp32, fp16):
        accuracy = record["accuracy"]
        assert isinstance(accuracy, dict) and accuracy["target_fraction"] == 0.99


def test_the_scorer_reads_real_length_and_fp16_logs_as_full_ones(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A real-length log scores as the full-length log that MLCommons' accuracy-squad.py makes of
    it (it pads each response to 384 tokens with -10000 logits), answers and all; fp16 is read."""
    record = _run(inputs, tmp_path / "fp16", "--output_dtype", "float16")
    dataset = _dataset(record)
    fp32 = _run(inputs, tmp_path / "fp32")
    full = np.full((len(dataset.features), bert.SEQ_LENGTH, 2), -10000.0, dtype=np.float32)
    for response in read_accuracy_log(tmp_path / "fp32" / ACCURACY_FILE):
        logged = np.frombuffer(response.data, np.float32).reshape(-1, 2)
        full[response.qsl_idx, : len(logged)] = logged
    entries = [
        {"seq_id": i, "qsl_idx": i, "data": full[i].tobytes().hex()} for i in range(len(full))
    ]
    full_log = tmp_path / "full.json"
    full_log.write_text(json.dumps(entries))
    by_log = {
        "full": score_accuracy_log(full_log, dataset, "float32", tmp_path / "full.pred"),
        "fp32": score_accuracy_log(
            tmp_path / "fp32" / ACCURACY_FILE, dataset, "float32", tmp_path / "fp32.pred"
        ),
    }
    assert by_log["full"] == by_log["fp32"]
    assert (tmp_path / "full.pred").read_bytes() == (tmp_path / "fp32.pred").read_bytes()
    # fp16 rounding may change a near tie, never the reading: every question is answered.
    fp16 = score_accuracy_log(tmp_path / "fp16" / ACCURACY_FILE, dataset, "float16")
    assert fp16.answered == fp16.questions == by_log["full"].questions
    with pytest.raises(HarnessError, match="is --output_dtype right"):
        score_accuracy_log(tmp_path / "fp16" / ACCURACY_FILE, dataset, "float32")
    accuracy = fp32["accuracy"]
    assert isinstance(accuracy, dict) and accuracy["f1"] == round(by_log["full"].f1, 3)


def test_high_accuracy_runs_as_bert_99_9(inputs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    record = _run(inputs, tmp_path / "ha", "--config_ver", "high_accuracy")
    assert record["config_ver"] == "high_accuracy" and record["submission_model"] == "bert-99.9"
    accuracy = record["accuracy"]
    assert isinstance(accuracy, dict) and accuracy["target_fraction"] == 0.999


def test_int8_engine_is_built_once_from_the_calibration_list(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    record = _run(inputs, tmp_path / "int8", "--precision", "int8")
    provenance = record["provenance"]
    assert isinstance(provenance, dict) and "onnxruntime-int8" in provenance["engine"]
    # What calibration saw, for the submission's documentation/calibration.md.
    assert provenance["calibration"].startswith("MLPerf's calibration list ")
    engine = Path(provenance["engine"])
    spec = json.loads((engine.parent / "engine.json").read_text())["spec"]
    assert spec["options"]["operators"] == "MatMul" and spec["calibration_sha256"]
    built = engine.stat().st_mtime_ns
    _run(inputs, tmp_path / "again", "--precision", "int8")
    assert engine.stat().st_mtime_ns == built  # the cache's engine, not a rebuild


def test_combinations_that_cannot_be_are_one_line(inputs: tuple[Path, Path, Path]) -> None:
    scratch, model, data = inputs
    flags = ["--scratch_path", str(scratch), "--model_path", str(model), "--data_dir", str(data)]
    options = parse_run_options(
        [*flags, "--config_ver", "high_accuracy", "--precision", "int8"], "bert"
    )
    with pytest.raises(HarnessError, match=r"bert-99\.9 .* int8 on the CPU does not"):
        plan_run(BENCHMARK, options)
    with pytest.raises(HarnessError, match="resnet50 has no --config_ver high_accuracy"):
        run_variant(RESNET50, parse_run_options(["--config_ver", "high_accuracy"], "resnet50"))
    with pytest.raises(HarnessError, match="resnet50 logs int32 responses"):
        run_variant(RESNET50, parse_run_options(["--output_dtype", "float16"], "resnet50"))
    variant = run_variant(BENCHMARK, parse_run_options(["--output_dtype", "float16"], "bert"))
    assert (variant.submission_model, variant.output_dtype) == ("bert-99", "float16")


def test_a_submission_stages_the_model_its_flags_choose(tmp_path: Path) -> None:
    def request(*run_args: str) -> SubmissionRequest:
        return SubmissionRequest(
            ("bert",), None, "me", "closed", "edge", "available", tmp_path, tmp_path, run_args
        )

    [default] = plan_benchmarks(request(), tmp_path / "runs")
    [high] = plan_benchmarks(request("--config_ver", "high_accuracy"), tmp_path / "runs")
    assert (default.rules.model, high.rules.model) == ("bert-99", "bert-99.9")
    assert high.rules.accuracy_target == pytest.approx(90.874 * 0.999)
    assert submission_model(BENCHMARK, ["--config_ver", "high_accuracy"]) == "bert-99.9"
    with pytest.raises(HarnessError, match="resnet50 has no --config_ver high_accuracy"):
        submission_model(RESNET50, ["--config_ver", "high_accuracy"])
