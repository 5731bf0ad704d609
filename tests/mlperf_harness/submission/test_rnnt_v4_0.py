"""RNN-T through the one submission command for its last round, v4.0: the stand-in's Offline and
Server runs, accuracy, TEST01 and TEST05, staged as rnnt in v4.0's layout, and the preflight check
of that layout. MLCommons' own v4.0 checker is run on such a tree by hand, as for the other rounds'
benchmarks (docs/rnnt.md says what it found)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlperf_harness.cli.submission import main
from mlperf_harness.submission.preflight import check_tree

pytestmark = pytest.mark.slow

SHORT = ["--min_duration_ms", "300", "--min_query_count", "8"]


@pytest.fixture(scope="module")
def submission(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("submission")
    code = main(
        [
            "--round", "v4.0",
            "--benchmarks", "rnnt",
            "--scenarios", "Offline,Server",
            "--submitter", "Tester",
            "--system_type", "datacenter",
            "--out_dir", str(out),
            "--full_results_dir", str(out / "full_results"),
            "--scratch_path", str(out / "scratch"),
            "--backend", "onnxruntime",
            *SHORT,
        ]
    )  # fmt: skip
    assert code == 0
    return out


def test_rnnt_stages_for_v4_0_with_its_audits(submission: Path) -> None:
    root = submission / "tree" / "closed" / "Tester"
    (system_file,) = (root / "systems").glob("*.json")
    system = system_file.stem
    for scenario in ("Offline", "Server"):
        results = root / "results" / system / "rnnt" / scenario
        accuracy_txt = (results / "accuracy" / "accuracy.txt").read_text()
        assert re.match(r"Word Error Rate: [\d.]+%, accuracy=[\d.]+%", accuracy_txt)
        compliance = root / "compliance" / system / "rnnt" / scenario
        assert "TEST PASS" in (compliance / "TEST01" / "verify_accuracy.txt").read_text()
        assert (compliance / "TEST05" / "verify_performance.txt").is_file()
    problems = check_tree(
        submission / "tree", full_logs=submission / "full_results", round_name="v4.0"
    )
    # Short CPU stand-in runs cannot meet durations, query counts or latency bounds; and the
    # stand-in's accuracy (100 - WER about 90.5) is below the official target 92.548 x 0.99.
    inherent = {"validity", "latency_bound"}
    below = re.compile(
        r".*/accuracy/accuracy.txt: accuracy \(100 - WER\) \d+\.\d+ is below rnnt's target 91\.623"
    )
    remaining = [p.line() for p in problems if not (p.short_run or p.kind.value in inherent)]
    assert len(remaining) == 2 and all(below.match(line) for line in remaining), remaining
