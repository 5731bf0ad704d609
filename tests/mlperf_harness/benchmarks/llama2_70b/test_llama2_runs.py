"""Llama2-70B through the real harness on its stand-in: built from nothing, an accuracy run whose
ROUGE and tokens per sample are the build's held-out figures to the digit (the serving loop decodes
as the build did), Server and Interactive runs whose summaries carry tokens/s, TTFT and TPOT, a
TEST06 run in Interactive that passes its verification, the inputs a user can get wrong (one line
each, no log directory), and Ctrl-C in the middle of generation (one line, partial logs only)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from one_line_errors import one_error_line
from reliability_support import Harness
from rouge_stand_in_runs import passed_accuracy_run, run_result

from mlperf_harness.benchmarks.llama2_70b import main as llama2_main
from mlperf_harness.benchmarks.llama2_70b import stand_in
from mlperf_harness.benchmarks.llama2_70b.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.loadgen.interruption import INTERRUPTED_FILE
from mlperf_harness.run_files import ACCURACY_TXT, RESULT_FILE
from mlperf_harness.submission.verify_test06 import verify_test06


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch")


# A short Server run, its rate given (no engine timing at the start: Llama2 bounds no sample
# latency to widen, only first-token and per-token latencies), over 8 of the stand-in's questions:
# mlperf.conf's sample_concatenate_permutation for llama2-70b rounds the query count up to whole
# passes over the loaded samples, so all 60 would be 60 queries (200 s at 0.3 queries/s). Nothing
# here needs the run VALID, so the rate is one that ends it in seconds.
_SHORT_SERVER = (
    "--min_duration_ms",
    "1000",
    "--min_query_count",
    "4",
    "--server_target_qps",
    "2",
    "--count",
    "8",
)


def _run(scratch: Path, log_dir: Path, *flags: str) -> dict[str, object]:
    return run_result(BENCHMARK, scratch, log_dir, *flags)


# The stand-in's build (about a minute here) and its runs: CI's slow set (tests/conftest.py).
@pytest.mark.slow
def test_the_stand_in_answers_as_built_and_runs(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry, record = passed_accuracy_run(
        BENCHMARK,
        scratch,
        tmp_path / "acc",
        "v6.1",
        stand_in.StandInRecord,
        stand_in.stand_in_dir(scratch) / stand_in.RECORD_FILE_NAME,
    )
    assert (entry["rouge1"], entry["rouge2"], entry["rougeL"], entry["tokens_per_sample"]) == (
        record.heldout_rouge1,
        record.heldout_rouge2,
        record.heldout_rougeL,
        record.heldout_tokens_per_sample,
    )
    line = (tmp_path / "acc" / ACCURACY_TXT).read_text()
    assert f"'tokens_per_sample': {record.heldout_tokens_per_sample}}}" in line

    capsys.readouterr()
    server = _run(
        scratch,
        tmp_path / "srv",
        *("--scenario", "Server", *_SHORT_SERVER),
    )
    summary = capsys.readouterr().out
    assert "tokens/s:" in summary and "TTFT:" in summary and "TPOT:" in summary
    loadgen = server["loadgen"]
    assert isinstance(loadgen, dict)
    assert loadgen["tokens_per_second"] > 0 and "p99" in loadgen["first_token_ns"]
    assert server["tokens_per_second"] == loadgen["tokens_per_second"]

    # TEST06 in Interactive: LoadGen's Server under llama2-70b-interactive's bounds.
    interactive = _run(
        scratch,
        tmp_path / "t06",
        *("--scenario", "Interactive", "--audit_test", "TEST06", *_SHORT_SERVER),
    )
    assert interactive["scenario"] == "Interactive"
    detail = (tmp_path / "t06" / "mlperf_log_detail.txt").read_text()
    assert '"key": "requested_server_ttft_latency", "value": 450000000' in detail
    verdict = verify_test06(tmp_path / "t06", tmp_path / "TEST06", "int32", _eos(scratch))
    assert verdict.passed, verdict.reasons


def _eos(scratch: Path) -> int:
    from mlperf_harness.cli.options import parse_run_options

    return BENCHMARK.eos_token_id(parse_run_options(["--scratch_path", str(scratch)], "llama2-70b"))


@pytest.mark.slow
def test_wrong_inputs_are_one_line(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in.ensure_stand_in(scratch)  # built where this test runs alone: its notice is no error
    flags = ["--scratch_path", str(scratch), "--log_dir", str(tmp_path / "x")]
    for extra, message in (
        (["--backend", "null"], "llama2-70b runs on --backend onnxruntime"),
        (["--output_dtype", "float32"], "llama2-70b logs token ids as int32 or int64"),
        (["--data_dir", str(tmp_path)], "needs Llama 2's tokenizer: give --model_path"),
        (["--model_path", str(tmp_path / "none")], "checkpoint directory not found"),
    ):
        capsys.readouterr()
        assert run_benchmark_cli(BENCHMARK, [*flags, *extra]) == 2
        assert message in one_error_line(capsys.readouterr().err, "llama2-70b")
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_ctrl_c_in_the_middle_of_generation_leaves_partial_logs_only(
    scratch: Path, tmp_path: Path
) -> None:
    stand_in.ensure_stand_in(scratch)
    log_dir = tmp_path / "run"
    harness = Harness()
    command = harness.command(
        "--scratch_path", scratch, "--log_dir", log_dir, "--scenario", "Offline",
        module=llama2_main.__name__,
    )  # fmt: skip
    run = harness.start(command, tmp_path / "output.txt")
    detail = log_dir / "mlperf_log_detail.txt"
    deadline = time.monotonic() + 180
    while not (detail.is_file() and "generated_query_count" in detail.read_text(errors="replace")):
        assert run.process.poll() is None, run.output()
        assert time.monotonic() < deadline, run.output()
        time.sleep(0.05)
    time.sleep(1.0)  # samples are being generated
    run.process.send_signal(signal.SIGINT)
    finished = run.finish(timeout=30)
    assert finished.returncode != 0
    names = {path.name for path in log_dir.iterdir()}
    assert INTERRUPTED_FILE in names and not names & {RESULT_FILE, ACCURACY_TXT}, names
    lines = [line for line in finished.stderr.splitlines() if line.strip()]
    assert "interrupted by SIGINT" in lines[-1] and str(log_dir) in lines[-1], finished.stderr
    assert "Traceback" not in finished.stderr
