"""What the tests of the ROUGE stand-ins' runs (GPT-J's, Llama2-70B's) do alike: run the harness's
command line on a scratch path and read the run's result.json, and an accuracy run of the stand-in
that passes, with the record its build left."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.records import read_record
from mlperf_harness.run_files import RESULT_FILE

R = TypeVar("R")


def run_result(
    benchmark: Benchmark, scratch: Path, log_dir: Path, *flags: str
) -> dict[str, object]:
    argv = ["--scratch_path", str(scratch), "--log_dir", str(log_dir), *flags]
    assert run_benchmark_cli(benchmark, argv) == 0
    record: dict[str, object] = json.loads((log_dir / RESULT_FILE).read_text())
    return record


def passed_accuracy_run(
    benchmark: Benchmark,
    scratch: Path,
    log_dir: Path,
    round: str,
    record_type: type[R],
    record_path: Path,
) -> tuple[dict[str, Any], R]:
    """An Offline accuracy run on the stand-in (built in `scratch` when absent) under `round`,
    answered by the serving loop, that passed: its accuracy entry, and the build's record."""
    accuracy = run_result(
        benchmark, scratch, log_dir, "--scenario", "Offline", "--test_mode", "AccuracyOnly"
    )
    assert accuracy["stand_in"] is True and accuracy["round"] == round
    assert accuracy["harness"] == "serving loop"
    entry = accuracy["accuracy"]
    assert isinstance(entry, dict) and entry["passed"] is True
    record = read_record(record_type, record_path)
    assert record is not None
    return entry, record
