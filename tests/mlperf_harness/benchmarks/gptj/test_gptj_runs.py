"""GPT-J through the real harness on its stand-in: built from nothing, an accuracy run whose ROUGE
is the build's held-out ROUGE to the digit (the serving loop decodes as the build did), a short
performance run, a TEST06 run that passes its verification, and the inputs a user can get wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from rouge_stand_in_runs import passed_accuracy_run, run_result

from mlperf_harness.benchmarks.gptj import stand_in
from mlperf_harness.benchmarks.gptj.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.config.measured_rates import MEASURED_SOURCES
from mlperf_harness.run_files import ACCURACY_TXT
from mlperf_harness.submission.verify_test06 import verify_test06


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch")


def _run(scratch: Path, log_dir: Path, *flags: str) -> dict[str, object]:
    return run_result(BENCHMARK, scratch, log_dir, *flags)


# The stand-in's build (about a minute here) and its runs: CI's slow set (tests/conftest.py).
@pytest.mark.slow
def test_the_stand_in_summarises_as_built_and_runs(scratch: Path, tmp_path: Path) -> None:
    entry, record = passed_accuracy_run(
        BENCHMARK,
        scratch,
        tmp_path / "acc",
        "v5.0",
        stand_in.StandInRecord,
        stand_in.stand_in_dir(scratch) / stand_in.RECORD_FILE_NAME,
    )
    assert (entry["rouge1"], entry["rouge2"], entry["rougeL"], entry["gen_len"]) == (
        record.heldout_rouge1,
        record.heldout_rouge2,
        record.heldout_rougeL,
        record.heldout_gen_len,
    )
    # The figures as numbers: what the v5.0 tag's checker reads.
    assert f"'rouge1': {record.heldout_rouge1}," in (tmp_path / "acc" / ACCURACY_TXT).read_text()

    # Two engines, each in a process of its own (--engine_processes): the same summaries.
    apart = _run(
        scratch,
        tmp_path / "apart",
        *("--scenario", "Offline", "--test_mode", "AccuracyOnly"),
        *("--engine_processes", "--worker_count", "2"),
    )
    assert apart["accuracy"] == entry
    generation = apart["generation"]
    assert isinstance(generation, dict) and generation["engines"] == 2
    assert min(generation["decode_steps"]) >= 1

    # 8 of the 60 articles: mlperf.conf's sample_concatenate_permutation for gptj rounds the query
    # count up to whole passes over the loaded samples (60 queries, one at a time, for all 60).
    result = _run(
        scratch,
        tmp_path / "ss",
        *("--scenario", "SingleStream", "--min_duration_ms", "1000", "--min_query_count", "8"),
        *("--count", "8"),
    )
    settings = result["settings"]
    assert isinstance(settings, dict)
    # (or by an earlier attempt, where the queries timed at start ran out: rates.md)
    assert settings["single_stream_expected_latency_ns"]["from"] in MEASURED_SOURCES

    # TEST06 in Server: first tokens reported as they become certain, logged by LoadGen.
    _run(
        scratch,
        tmp_path / "t06",
        *("--scenario", "Server", "--audit_test", "TEST06", "--server_target_qps", "2"),
        *("--min_duration_ms", "1000", "--min_query_count", "8", "--count", "8"),
    )
    verdict = verify_test06(tmp_path / "t06", tmp_path / "TEST06", "int64", _eos(scratch))
    assert verdict.passed, verdict.reasons
    lines = (tmp_path / "TEST06" / "verify_accuracy.txt").read_text().splitlines()
    assert lines[0] == "First token check pass: True"
    assert (tmp_path / "TEST06" / "accuracy" / "mlperf_log_accuracy.json").is_file()


def _eos(scratch: Path) -> int:
    return BENCHMARK.eos_token_id(BENCHMARK.parse_options(["--scratch_path", str(scratch)]))


@pytest.mark.slow
def test_wrong_backends_and_the_real_size_stand_in_are_one_line(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from one_line_errors import one_error_line

    from mlperf_harness.benchmarks.gptj.real_size import main as real_size_main

    flags = ["--scratch_path", str(scratch), "--log_dir", str(tmp_path / "x")]
    stand_in.ensure_stand_in(scratch)  # built where this test runs alone: its notice is no error
    capsys.readouterr()
    assert run_benchmark_cli(BENCHMARK, [*flags, "--backend", "null"]) == 2
    assert "gptj runs on --backend onnxruntime" in one_error_line(capsys.readouterr().err, "gptj")
    assert real_size_main(["--out", str(tmp_path / "6b")]) == 0
    capsys.readouterr()
    argv = [*flags, "--model_path", str(tmp_path / "6b"), "--test_mode", "AccuracyOnly"]
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    assert "it has no accuracy" in one_error_line(capsys.readouterr().err, "gptj")
    assert not (tmp_path / "x").exists()


def test_every_h100_and_h200_system_runs_the_torch_engine_with_rates_where_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def config(system: str, scenario: str) -> str:
        argv = ["--show_config", "--system_name", system, "--scenario", scenario]
        assert run_benchmark_cli(BENCHMARK, [*argv, "--scratch_path", str(tmp_path)]) == 0
        return capsys.readouterr().out

    two = config("H200-SXM-141GBx2", "Offline")
    assert "backend = 'torch'" in two and "precision = 'fp16'" in two
    assert "offline_expected_qps = 51.1" in two  # measured on two, not one GPU's rate doubled
    assert "engine_processes = True" in two  # as the two-GPU rate was measured
    assert "engine_processes = True" in config("H100-SXM-80GBx8", "Server")
    assert "timed at start" in config("H200-SXM-141GBx2", "Server")  # not measured there
    assert "timed at start" in config("H100-SXM-80GBx2", "Offline")
    one = config("H200-SXM-141GBx1", "Offline")
    assert "offline_expected_qps = 26.1" in one
    assert "engine_processes = True" not in one
    assert "server_target_qps = 21.4" in config("H200-SXM-141GBx1", "Server")
    single = config("H100-SXM-80GBx8", "SingleStream")
    assert "backend = 'torch'" in single and "engine_processes = True" not in single
