"""Every run gets a log directory of its own, holding nothing of an earlier run, and a run that
fails before it starts leaves no empty timestamped folder: real harness processes."""

from __future__ import annotations

import json
import math
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from reliability_support import Harness

# The child processes below run harness_overhead's entry point: imported here, Pants ships it.
from mlperf_harness.benchmarks.harness_overhead import main as _entry_point  # noqa: F401
from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK as OVERHEAD_BENCHMARK
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK as RESNET50
from mlperf_harness.cli.main import run_benchmark_cli

# These runs start in another directory (the default log root is relative to it): the import path,
# relative inside Pants' sandbox, made absolute.
ELSEWHERE = {"PYTHONPATH": os.pathsep.join(os.path.abspath(entry) for entry in sys.path)}
# A 300 ms query at 1,000 samples/s: harness_overhead's config sizes its Offline query by a count
# (10 million samples, seconds of CPU each run) unless min_query_count says otherwise.
SHORT = (
    "--scenario", "Offline", "--min_duration_ms", "300", "--offline_expected_qps", "1000",
    "--min_query_count", "1",
)  # fmt: skip
# Imports first, then "ready", then the run at the instant the test writes into the go file: runs
# started within milliseconds of each other, in one second.
AT_INSTANT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mlperf_harness.benchmarks.harness_overhead.main import main
    go = Path(sys.argv.pop(1))
    print("ready", flush=True)
    while not go.is_file() or not go.read_text():
        time.sleep(0.01)
    time.sleep(max(0.0, float(go.read_text()) - time.time()))
    main()
    """
)


def test_runs_started_in_the_same_second_get_their_own_log_directories(
    harness: Harness, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    args = ["--system_name", "box", *SHORT]
    runs = [
        harness.start(
            ["env", "-C", str(tmp_path), *harness.script(AT_INSTANT, str(go), *args)],
            tmp_path / f"output-{n}.txt",
            env=ELSEWHERE,
        )
        for n in range(3)
    ]
    for run in runs:
        run.wait_for("ready")
    at = math.floor(time.time()) + 1.05  # just past a second's start: a whole second to get going
    go.write_text(str(at))
    for run in runs:
        done = run.finish()
        assert done.returncode == 0, done.stderr
    results = sorted((tmp_path / "build" / "logs").glob("*/box/harness_overhead/*/*/result.json"))
    assert len(results) == 3, results
    assert len({path.parent for path in results}) == 3
    # The runs met in one second (their folders share the time stamp, told apart by a suffix), or
    # the test proved nothing: only a machine too busy to start them within a second misses that.
    stamps = [path.relative_to(tmp_path / "build" / "logs").parts[0] for path in results]
    seconds = ["-".join(stamp.split("-")[:2]) for stamp in stamps]
    if len(set(seconds)) == len(seconds):
        pytest.skip(f"the runs did not start within one second here: {stamps}")
    assert any(stamp.endswith("-2") for stamp in stamps), stamps


def test_a_failed_run_leaves_no_empty_log_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the default log root, build/logs, is relative to it
    missing = tmp_path / "missing.onnx"
    argv = ["--model_path", str(missing), "--scratch_path", str(tmp_path / "scratch")]
    assert run_benchmark_cli(RESNET50, argv) == 2
    assert "model not found" in capsys.readouterr().err
    logs = tmp_path / "build" / "logs"
    assert not logs.exists() or not any(logs.iterdir())


def test_a_reused_log_dir_keeps_nothing_of_the_earlier_run(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    stale = {
        "accuracy.txt": "accuracy=100.000%, good=40, total=40\n",
        "result.json": json.dumps({"test_mode": "AccuracyOnly", "result_valid": None}),
        "INTERRUPTED": "interrupted by SIGINT\n",
        "report.html": "<html>an earlier run</html>",
    }
    for name, text in stale.items():
        (logs / name).write_text(text)
    (logs / "notes.txt").write_text("the user's own file\n")
    assert run_benchmark_cli(OVERHEAD_BENCHMARK, ["--log_dir", str(logs), *SHORT]) == 0
    names = {path.name for path in logs.iterdir()}
    assert not names & {"accuracy.txt", "INTERRUPTED", "report.html"}, names
    assert json.loads((logs / "result.json").read_text())["test_mode"] == "PerformanceOnly"
    assert (logs / "notes.txt").read_text() == "the user's own file\n"
