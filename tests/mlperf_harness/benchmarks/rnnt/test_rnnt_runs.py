"""RNN-T end to end on its stand-in (built once for the module, about a minute and a half): an
Offline accuracy run whose accuracy.txt is the line MLCommons' accuracy_eval.py prints for the same
log and manifest (reimplemented in tests/mlperf_harness/accuracy/test_librispeech_wer.py), equal to
the WER the build measured; the same responses with Offline's batches in length order or not, and
with Server's batches from length-range queues; the three scenarios' performance runs; the command
line's round."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rnnt_reference_wer import reference_accuracy_line

from mlperf_harness.benchmarks.rnnt.benchmark import BENCHMARK
from mlperf_harness.benchmarks.rnnt.stand_in import ensure_stand_in
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.datasets.librispeech.manifest import read_manifest

pytestmark = pytest.mark.slow
SHORT = ["--min_duration_ms", "500", "--min_query_count", "4"]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scratch")
    ensure_stand_in(path, progress=False)
    return path


def _run(scratch: Path, logs: Path, *flags: str) -> Path:
    argv = ["--scratch_path", str(scratch), "--log_dir", str(logs), *flags]
    assert run_benchmark_cli(BENCHMARK, argv) == 0
    (result,) = logs.rglob("result.json")
    return result.parent


def test_accuracy_run_is_the_reference_scripts_wer(scratch: Path, tmp_path: Path) -> None:
    log_dir = _run(scratch, tmp_path, "--scenario", "Offline", "--test_mode", "AccuracyOnly")
    built = ensure_stand_in(scratch, progress=False)
    transcripts = [u.transcript for u in read_manifest(built.data_dir).utterances]
    line = (log_dir / "accuracy.txt").read_text().strip()
    assert line == reference_accuracy_line(log_dir / "mlperf_log_accuracy.json", transcripts)
    result = json.loads((log_dir / "result.json").read_text())
    assert result["accuracy"]["wer_percent"] == pytest.approx(
        built.record.heldout_wer_percent, abs=1e-3
    )
    assert result["accuracy"]["samples"] == built.record.heldout_utterances


def _logged(log_dir: Path) -> dict[int, str]:
    entries = json.loads((log_dir / "mlperf_log_accuracy.json").read_text())
    return {int(entry["qsl_idx"]): str(entry["data"]) for entry in entries}


def test_length_ordered_batches_give_every_utterance_the_same_response(
    scratch: Path, tmp_path: Path
) -> None:
    """Offline's query cut into batches by length (the default) or in issue order: each
    utterance's logged response is the same (a batch's rows decode independently)."""
    flags = ("--scenario", "Offline", "--test_mode", "AccuracyOnly")
    ordered = _logged(_run(scratch, tmp_path / "ordered", *flags))
    issued = _logged(_run(scratch, tmp_path / "issued", *flags, "--no-order_by_length"))
    built = ensure_stand_in(scratch, progress=False)
    assert len(ordered) == built.record.heldout_utterances > 16  # more than Offline's one batch
    assert ordered == issued


def test_server_length_queues_give_every_utterance_offlines_response(
    scratch: Path, tmp_path: Path
) -> None:
    """Server's batches from length-range queues (each batch one queue's utterances): each
    utterance's logged response is the one Offline logs."""
    accuracy = ("--test_mode", "AccuracyOnly")
    offline = _logged(_run(scratch, tmp_path / "offline", "--scenario", "Offline", *accuracy))
    server_flags = (
        "--server_length_buckets",
        "3",
        "--batch_size",
        "8",
        "--server_target_qps",
        "50",
    )
    server = _logged(
        _run(scratch, tmp_path / "server", "--scenario", "Server", *accuracy, *server_flags)
    )
    assert server == offline


@pytest.mark.parametrize("scenario", ["Offline", "Server", "SingleStream"])
def test_performance_runs(scratch: Path, tmp_path: Path, scenario: str) -> None:
    log_dir = _run(scratch, tmp_path, "--scenario", scenario, *SHORT)
    assert (log_dir / "mlperf_log_summary.txt").is_file()


def test_a_run_is_for_v4_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--round", "v6.1", "--backend", "null", "--scratch_path", str(tmp_path)]
    assert run_benchmark_cli(BENCHMARK, argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rnnt" in err[0]
