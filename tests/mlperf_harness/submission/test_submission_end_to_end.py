"""The one command, end to end on a small stand-in with short runs: every scenario of ResNet-50 with
both audits, a staged, truncated and packed tree, the summary and the report; then a second call
with the same arguments redoes nothing, and one with a run missing (as an interrupted call leaves it)
redoes only that run; and a submission staged from those runs, unverified, without running."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
from small_stand_in import SmallStandIn, build_small_stand_in

from mlperf_harness.cli.submission import main
from mlperf_harness.submission.preflight import check_tree

# Sixteen runs and the pipeline twice more: minutes, so CI's slow set (tests/conftest.py).
pytestmark = pytest.mark.slow

SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")
RUNS_PER_SCENARIO = 4  # performance, accuracy, TEST01, TEST04
SHORT = ["--min_duration_ms", "300", "--min_query_count", "8"]


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> SmallStandIn:
    return build_small_stand_in(tmp_path_factory.mktemp("stand_in"))


@pytest.fixture(scope="module")
def submission(stand_in: SmallStandIn, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("submission")
    assert _submit(stand_in, out) == 0
    return out


def _submit(stand_in: SmallStandIn, out: Path, *extra: str) -> int:
    return main(
        [
            "--benchmarks", "resnet50",
            "--scenarios", ",".join(SCENARIOS),
            "--submitter", "Tester",
            "--out_dir", str(out),
            "--full_results_dir", str(out / "full_results"),
            *stand_in.run_flags(),
            "--scratch_path", str(out / "scratch"),
            *SHORT,
            *extra,
        ]
    )  # fmt: skip


def test_the_tree_is_staged_truncated_packed_and_passes_the_preflight_check(
    submission: Path,
) -> None:
    root = submission / "tree" / "closed" / "Tester"
    systems = list((root / "systems").glob("*.json"))
    assert len(systems) == 1
    system = systems[0].stem
    description = json.loads(systems[0].read_text())
    assert description["submitter"] == "Tester" and description["system_type"] == "datacenter,edge"
    for scenario in SCENARIOS:
        base = root / "results" / system / "resnet50" / scenario
        assert sorted(p.name for p in (base / "performance" / "run_1").iterdir()) == [
            "mlperf_log_detail.txt",
            "mlperf_log_summary.txt",
        ]
        for name in ("measurements.json", "user.conf", "README.md"):
            assert (base / name).stat().st_size > 0
        accuracy_txt = (base / "accuracy" / "accuracy.txt").read_text()
        assert "accuracy=100.000%, good=40, total=40" in accuracy_txt
        # The staged log is cut; the full one is kept outside the tree and its hash is recorded.
        relative = base.relative_to(submission / "tree") / "accuracy" / "mlperf_log_accuracy.json"
        full = (submission / "full_results" / relative).read_bytes()
        assert f"hash={hashlib.sha256(full).hexdigest()}" in accuracy_txt
        assert (base / "accuracy" / "mlperf_log_accuracy.json").stat().st_size <= 10_240
        for test in ("TEST01", "TEST04"):
            assert (base / test / "verify_performance.txt").is_file()
        assert "TEST PASS" in (base / "TEST01" / "verify_accuracy.txt").read_text().splitlines()
    problems = check_tree(submission / "tree", full_logs=submission / "full_results")
    # Short CPU stand-in runs cannot meet durations, query counts or latency bounds (INVALID, or
    # Server under a bound widened to the CPU's: docs/rates.md): nothing else.
    inherent = {"validity", "latency_bound"}
    assert [p.line() for p in problems if not (p.short_run or p.kind.value in inherent)] == []

    tarball = submission / "mlperf-inference-Tester-submission.tar.gz"
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    assert any(name.endswith(f"{system}/resnet50/Offline/accuracy/accuracy.txt") for name in names)
    sha1 = (submission / "mlperf-inference-Tester-submission.sha1").read_text()
    assert hashlib.sha1(tarball.read_bytes()).hexdigest() in sha1


def test_summary_and_report(submission: Path) -> None:
    rows = list(csv.DictReader((submission / "summary.csv").open()))
    assert [row["scenario"] for row in rows] == list(SCENARIOS)
    assert all(row["accuracy_passed"] == "yes" and row["TEST01"] for row in rows)
    assert "| resnet50 | Offline | samples/s |" in (submission / "summary.md").read_text()
    page = (submission / "report.html").read_text()
    assert "<img" in page and "resnet50" in page and "http://" not in page


def test_a_second_call_redoes_nothing_and_a_missing_run_alone_is_redone(
    submission: Path, stand_in: SmallStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert _submit(stand_in, submission) == 0
    assert capsys.readouterr().err.count("done before, inputs unchanged") == 24
    # An interrupted call leaves a run unfinished: its directory is not in place.
    shutil.rmtree(submission / "runs" / "resnet50" / "Server" / "TEST04" / "run")
    assert _submit(stand_in, submission) == 0
    err = capsys.readouterr().err
    assert err.count("done before, inputs unchanged") == 22  # the run and its verification redone
    assert "resnet50 Server TEST04 audit run" in err


def test_earlier_runs_stage_without_running_and_unverified_audits_are_verified(
    submission: Path, stand_in: SmallStandIn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = shutil.copytree(submission / "runs", tmp_path / "earlier")  # keeps the times
    for test in ("TEST01", "TEST04"):
        for verification in earlier.glob(f"resnet50/*/{test}/{test}"):
            shutil.rmtree(verification)
    out = tmp_path / "staged"
    capsys.readouterr()
    assert _submit(stand_in, out, "--stage_runs", str(earlier)) == 0
    err = capsys.readouterr().err
    assert err.count("submission: verifying TEST01") == len(SCENARIOS)
    assert err.count("submission: verifying TEST04") == len(SCENARIOS)
    # Nothing was run: no progress line ("[n/24] resnet50 Offline ... run") and no runs directory.
    assert not re.search(r"^\[\d+/\d+\]", err, re.MULTILINE) and not (out / "runs").exists()
    [system] = (out / "tree" / "closed" / "Tester" / "systems").glob("*.json")
    for scenario in SCENARIOS:
        base = out / "tree" / "closed" / "Tester" / "results" / system.stem / "resnet50" / scenario
        assert "TEST PASS" in (base / "TEST01" / "verify_accuracy.txt").read_text().splitlines()
        assert (base / "TEST04" / "verify_performance.txt").is_file()

    # With nothing complete to stage, one line says what is missing.
    shutil.rmtree(earlier / "resnet50" / "Offline" / "accuracy")
    assert _submit(stand_in, tmp_path / "again", "--stage_runs", str(earlier)) == 2
    err = capsys.readouterr().err
    assert "incomplete: resnet50 Offline" in err
    assert "--stage_runs: no complete set of runs for resnet50 Offline" in err
