"""The HTML report on real null-backend runs: self-contained pages with the plots and the figures,
runs without a timeline, staged trees, the command line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.harness.timeline import TIMELINE_FILE
from mlperf_harness.loadgen.results import DETAIL_FILE, SUMMARY_FILE
from mlperf_harness.report import write_run_report, write_submission_report
from mlperf_harness.report.main import main

RUNS = {
    "Offline": ["--min_duration_ms", "300", "--offline_expected_qps", "20000"],
    "Server": ["--min_duration_ms", "300", "--server_target_qps", "2000"],
    # By count (harness_overhead's 1 ms minimum): LoadGen never runs out of queries.
    "SingleStream": ["--min_query_count", "2000"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    made = {}
    for scenario, extra in RUNS.items():
        log_dir = root / scenario
        argv = ["--scenario", scenario, "--log_dir", str(log_dir)]
        assert run_benchmark_cli(BENCHMARK, [*argv, *extra]) == 0
        made[scenario] = log_dir
    return made


def _copy_run(source: Path, destination: Path) -> Path:
    shutil.copytree(source, destination)
    return destination


def assert_self_contained(page: str) -> None:
    """No reference to anything outside the page: images are data: URIs, links are anchors."""
    for attribute, value in re.findall(r'\b(src|href|action|data)\s*=\s*"([^"]*)"', page):
        if attribute == "src":
            assert value.startswith("data:image/"), value
        elif attribute == "href":
            assert value.startswith("#"), value
        else:
            raise AssertionError(f"unexpected {attribute}={value!r}")
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()
    assert "url(" not in page  # no CSS fetches
    assert not re.search(r"(?i)\bhttps?://", page.replace("http://www.w3.org", ""))


def _images(page: str) -> int:
    return len(re.findall(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{200,}"', page))


def test_offline_run_page(runs: dict[str, Path], tmp_path: Path) -> None:
    out = write_run_report(runs["Offline"], tmp_path / "offline.html")
    page = out.read_text()
    assert_self_contained(page)
    assert _images(page) == 2  # the latency distribution and the completion timeline
    result = json.loads((runs["Offline"] / "result.json").read_text())
    assert f"{result['samples_per_second']:,.1f}" in page
    assert "Completion timeline" in page
    assert "harness_overhead Offline PerformanceOnly" in page
    assert "LoadGen&#x27;s hand-over of the query" in page
    # The settings and where each came from.
    assert "offline_expected_qps" in page and "command line" in page


def test_server_run_page_shows_the_bound_and_the_rates(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    page = write_run_report(runs["Server"], tmp_path / "server.html").read_text()
    assert_self_contained(page)
    assert _images(page) == 2
    assert "Over the run" in page
    assert "p99 latency &lt;= 10.000 ms" in page  # harness_overhead's LoadGen default bound
    result = json.loads((runs["Server"] / "result.json").read_text())
    assert f"{result['completed_samples_per_second']:,.1f}" in page
    assert "VALID" in page


def test_a_run_without_a_timeline_shows_loadgens_percentiles(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    run = _copy_run(runs["SingleStream"], tmp_path / "old_run")
    (run / TIMELINE_FILE).unlink()
    page = write_run_report(run, tmp_path / "old.html").read_text()
    assert_self_contained(page)
    assert "No harness timeline" in page
    assert _images(page) == 1  # LoadGen's percentiles only
    p90 = json.loads((run / "result.json").read_text())["latency_ns"]["p90"]
    assert f"{p90 / 1e3:.1f} µs" in page or f"{p90 / 1e6:.3f} ms" in page


def test_everything_from_the_logs_is_escaped(runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy_run(runs["Offline"], tmp_path / "hostile")
    result = json.loads((run / "result.json").read_text())
    result["system_name"] = "<script>alert(1)</script>"
    result["settings"]["batch_size"]["from"] = '"><img src=x onerror=alert(1)>'
    (run / "result.json").write_text(json.dumps(result))
    page = write_run_report(run, tmp_path / "hostile.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert_self_contained(page)


def _stage(runs: dict[str, Path], tree: Path) -> Path:
    """A staged tree as the checker wants it, from the runs' LoadGen logs (no timelines)."""
    base = tree / "closed" / "Tester"
    for scenario, run in runs.items():
        scenario_dir = base / "results" / "sys1" / "resnet50" / scenario
        performance = scenario_dir / "performance" / "run_1"
        performance.mkdir(parents=True)
        for name in (SUMMARY_FILE, DETAIL_FILE):
            shutil.copyfile(run / name, performance / name)
        if scenario == "Offline":  # staging may keep the timeline beside LoadGen's logs
            shutil.copyfile(run / TIMELINE_FILE, performance / TIMELINE_FILE)
        audit = scenario_dir / "TEST04"
        audit.mkdir()
        verdict = "TEST FAIL" if scenario == "Server" else "TEST PASS"
        (audit / "verify_performance.txt").write_text(f"some lines\n{verdict}\n")
    (base / "systems").mkdir(parents=True)
    system = {"system_name": "sys1 <fast>", "submitter": "Tester", "accelerators_per_node": "0"}
    (base / "systems" / "sys1.json").write_text(json.dumps(system))
    return tree


def test_submission_page_of_a_staged_tree(runs: dict[str, Path], tmp_path: Path) -> None:
    tree = _stage(runs, tmp_path / "tree")
    page = write_submission_report(tree, tmp_path / "submission.html").read_text()
    assert_self_contained(page)
    for scenario in RUNS:
        assert f"sys1 / resnet50 / {scenario}" in page
    assert "sys1 &lt;fast&gt;" in page  # the system description, escaped
    assert "TEST04 PASS" in page and "TEST04 FAIL" in page
    assert page.count("No harness timeline") == 2  # Server and SingleStream were staged bare
    assert _images(page) == 2 + 1 + 1  # Offline's two plots, the others' percentile charts


# The two heaviest pages (every run's plots again): CI's slow set; the staged tree's page stays.
@pytest.mark.slow
def test_submission_page_of_run_directories(runs: dict[str, Path], tmp_path: Path) -> None:
    page = write_submission_report(list(runs.values()), tmp_path / "runs.html").read_text()
    assert_self_contained(page)
    assert _images(page) == 2 * len(runs)
    assert "harness_overhead / Server" in page


@pytest.mark.slow
def test_command_line(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy_run(runs["Server"], tmp_path / "run")
    assert main([str(run)]) == 0
    assert (run / "report.html").is_file()
    assert str(run / "report.html") in capsys.readouterr().out
    tree = _stage(runs, tmp_path / "tree")
    out = tmp_path / "elsewhere" / "page.html"
    assert main([str(tree), "--out", str(out)]) == 0
    assert out.is_file()
    assert main([str(tree)]) == 0
    assert (tmp_path / "tree_report.html").is_file()  # beside the tree, never inside it


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing")]) == 2
    assert "no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    assert "found no LoadGen runs" in capsys.readouterr().err
