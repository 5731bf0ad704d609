"""The preflight check on staged trees built here from real LoadGen logs (the null backend's
harness_overhead runs, a few seconds for all four scenarios and both audits), then broken one way
at a time."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.submission import preflight_mlcommons
from mlperf_harness.submission.preflight import Kind, Problem, check_tree, main, report
from mlperf_harness.submission.preflight_mlcommons import CHECKER_LOG, CheckerRun, checker_problems

SCENARIOS = ("Offline", "SingleStream", "MultiStream", "Server")
# Short but VALID null-backend runs on any machine: sized by count over harness_overhead's 1 ms
# minimum duration (SingleStream and MultiStream enough queries for early stopping), Server a rate
# the null backend keeps up with.
RUN_FLAGS = {
    "Offline": ["--min_query_count", "200000"],
    "SingleStream": ["--min_query_count", "2000"],
    "MultiStream": ["--min_query_count", "2000"],
    "Server": [
        "--min_duration_ms",
        "200",
        "--server_target_qps",
        "2000",
        "--min_query_count",
        "500",
    ],
}
SUBMITTER = "acme"
SYSTEM = "box"
MLLOG = ":::MLLOG "


def _run(scenario: str, log_dir: Path, *extra: str) -> None:
    assert (
        run_benchmark_cli(BENCHMARK, ["--scenario", scenario, "--log_dir", str(log_dir), *extra])
        == 0
    )


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """perf, acc, TEST01 and TEST04 run directories per scenario."""
    root = tmp_path_factory.mktemp("runs")
    for scenario in SCENARIOS:
        flags = RUN_FLAGS[scenario]
        _run(scenario, root / scenario / "perf", *flags)
        _run(scenario, root / scenario / "acc", "--test_mode", "AccuracyOnly")
        _run(scenario, root / scenario / "TEST01", *flags, "--audit_test", "TEST01")
        _run(scenario, root / scenario / "TEST04", *flags, "--audit_test", "TEST04")
    return root


def edit_log(detail: Path, edit: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
    """Rewrite each :::MLLOG record through `edit` (None drops it)."""
    lines = []
    for line in detail.read_text().splitlines():
        if line.startswith(MLLOG):
            record = edit(json.loads(line[len(MLLOG) :]))
            if record is None:
                continue
            line = MLLOG + json.dumps(record)
        lines.append(line)
    detail.write_text("\n".join(lines) + "\n")


def set_values(detail: Path, **values: Any) -> None:
    seen = set()

    def edit(record: dict[str, Any]) -> dict[str, Any]:
        if record["key"] in values:
            seen.add(record["key"])
            record["value"] = values[record["key"]]
        return record

    edit_log(detail, edit)
    assert seen == set(values), f"{detail} lacks {set(values) - seen}"


def normalize(detail: Path) -> None:
    """What a loaded machine may vary (a noisy INVALID audit run, an error it logs) made steady:
    these tests are about the preflight check, not LoadGen's verdicts."""

    def edit(record: dict[str, Any]) -> dict[str, Any] | None:
        if record.get("metadata", {}).get("is_error"):
            return None
        if record["key"] == "result_validity":
            record["value"] = "VALID"
        if record["key"] == "early_stopping_met":
            record["value"] = True
        return record

    edit_log(detail, edit)


def truncate(log: Path, full_dir: Path | None = None) -> str:
    """MLCommons' truncation, written out here: first and last 4096 characters; returns the hash."""
    text = log.read_text()
    digest = hashlib.sha256(log.read_bytes()).hexdigest()
    if full_dir is not None:
        full_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, full_dir / log.name)
    if len(text) >= 4096:
        log.write_text(text[:4096] + "\n\n...\n\n" + text[-4096:])
    return digest


SYSTEM_DESCRIPTION = {
    "division": "closed",
    "submitter": SUBMITTER,
    "system_type": "datacenter,edge",
    "status": "available",
    "system_name": "A box",
    "number_of_nodes": "1",
    "host_processor_model_name": "AMD EPYC",
    "host_processors_per_node": "1",
    "host_processor_core_count": "2",
    "host_memory_capacity": "24 GB",
    "host_memory_configuration": "N/A",
    "host_storage_capacity": "100 GB",
    "host_storage_type": "SSD",
    "host_networking": "N/A",
    "host_network_card_count": "0",
    "host_networking_topology": "N/A",
    "accelerators_per_node": "0",
    "accelerator_model_name": "N/A",
    "accelerator_memory_capacity": "N/A",
    "accelerator_host_interconnect": "N/A",
    "accelerator_memory_configuration": "N/A",
    "accelerator_interconnect": "N/A",
    "cooling": "air",
    "framework": "mlperf_harness",
    "operating_system": "Linux",
    "other_software_stack": "Python 3.11",
    "host_processor_frequency": "",
    "host_processor_caches": "",
    "host_processor_interconnect": "",
    "accelerator_frequency": "",
    "accelerator_interconnect_topology": "",
    "accelerator_on-chip_memories": "",
    "hw_notes": "",
    "sw_notes": "",
    "system_type_detail": "",
}
MEASUREMENTS = {
    "input_data_types": "int8",
    "retraining": "no",
    "starting_weights_filename": "resnet50_v1.onnx",
    "weight_data_types": "fp32",
    "weight_transformations": "none",
}


def _copy_logs(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt"):
        shutil.copy(source / name, target / name)
        if name.endswith("detail.txt"):
            normalize(target / name)


def _stage_accuracy(source: Path, target: Path, line: str, full_dir: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "mlperf_log_accuracy.json", target / "mlperf_log_accuracy.json")
    digest = truncate(target / "mlperf_log_accuracy.json", full_dir)
    (target / "accuracy.txt").write_text(f"{line}\nhash={digest}\n")


def build_tree(runs: Path, tree: Path, *, official: bool = True) -> Path:
    """closed/acme/ as staging lays it out; `official` sets the logs' round settings (600 s, 24,576
    samples per Offline query, the whole dataset) that a short run cannot have."""
    submitter = tree / "closed" / SUBMITTER
    (submitter / "systems").mkdir(parents=True)
    (submitter / "systems" / f"{SYSTEM}.json").write_text(json.dumps(SYSTEM_DESCRIPTION, indent=2))
    (submitter / "src").mkdir()
    (submitter / "src" / "README.md").write_text("mlperf_harness at commit 0123abc\n")
    (submitter / "documentation").mkdir()
    (submitter / "documentation" / "calibration.md").write_text("No calibration: fp32 weights.\n")
    full = tree.parent / "full_logs"
    for scenario in SCENARIOS:
        source = runs / scenario
        relative = Path("closed", SUBMITTER, "results", SYSTEM, "resnet50", scenario)
        target = tree / relative
        _copy_logs(source / "perf", target / "performance" / "run_1")
        _copy_logs(source / "acc", target / "accuracy")
        line = "accuracy=76.500%, good=765, total=1000"
        _stage_accuracy(source / "acc", target / "accuracy", line, full / relative / "accuracy")
        (target / "measurements.json").write_text(json.dumps(MEASUREMENTS))
        shutil.copy(source / "perf" / "user.conf", target / "user.conf")
        (target / "README.md").write_text(f"./pants run :resnet50 -- --scenario {scenario}\n")
        for test in ("TEST01", "TEST04"):
            _copy_logs(source / test, target / test / "performance" / "run_1")
            (target / test / "verify_performance.txt").write_text("TEST PASS\n")
        (target / "TEST01" / "verify_accuracy.txt").write_text("TEST PASS\n")
        _stage_accuracy(
            source / "TEST01",
            target / "TEST01" / "accuracy",
            line,
            full / relative / "TEST01" / "accuracy",
        )
        if official:
            for detail in target.glob("**/performance/run_1/mlperf_log_detail.txt"):
                set_values(detail, effective_min_duration_ms=600_000)
                if scenario == "Offline":
                    set_values(detail, effective_samples_per_query=24_576)
            set_values(
                target / "accuracy" / "mlperf_log_detail.txt",
                effective_accuracy_sample_count=50_000,
            )
    return tree


@pytest.fixture(scope="session")
def clean_tree(runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tree(runs, tmp_path_factory.mktemp("clean") / "tree")


@pytest.fixture
def tree(clean_tree: Path, tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "tree"
    shutil.copytree(clean_tree, copy)
    shutil.copytree(clean_tree.parent / "full_logs", tmp_path / "full_logs")
    yield copy


def scenario_dir(tree: Path, scenario: str = "Offline") -> Path:
    return tree / "closed" / SUBMITTER / "results" / SYSTEM / "resnet50" / scenario


def system_json(tree: Path) -> Path:
    return tree / "closed" / SUBMITTER / "systems" / f"{SYSTEM}.json"


def edit_json(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def lines(problems: list[Problem]) -> str:
    return "\n".join(problem.line() for problem in problems)


def test_a_clean_tree_passes(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_tree(tree, full_logs=tree.parent / "full_logs") == []
    assert main([str(tree)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no problems found" in captured.err


def test_a_short_stand_in_tree_has_only_short_run_problems(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = build_tree(runs, tmp_path / "tree", official=False)
    problems = check_tree(tree)
    assert problems, "short runs must be reported as the checker would"
    assert all(problem.short_run for problem in problems), lines(problems)
    kinds = {problem.kind for problem in problems}
    # (harness_overhead's runs are VALID by count, their minimum duration 1 ms)
    assert kinds == {Kind.MIN_DURATION, Kind.DATASET_SIZE}
    # 4 performance runs and 8 audit runs below 600 s; 4 accuracy runs of 1,024 samples.
    assert sum(p.kind is Kind.MIN_DURATION for p in problems) == 12
    assert sum(p.kind is Kind.DATASET_SIZE for p in problems) == 4
    assert main([str(tree)]) == 1
    assert main([str(tree), "--allow_short_runs"]) == 0
    out = capsys.readouterr().out
    assert "(allowed: short run)" in out
    assert "Offline/performance/run_1/mlperf_log_detail.txt: min_duration_ms is 1," in out


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def _drop_hash(tree: Path) -> None:
    path = scenario_dir(tree) / "accuracy" / "accuracy.txt"
    path.write_text(path.read_text().split("\nhash=")[0] + "\n")


def _untruncate(tree: Path) -> None:
    full = tree.parent / "full_logs" / scenario_dir(tree).relative_to(tree) / "accuracy"
    shutil.copy(full / "mlperf_log_accuracy.json", scenario_dir(tree) / "accuracy")


def _add_loadgen_error(tree: Path) -> None:
    detail = scenario_dir(tree, "SingleStream") / "performance" / "run_1" / "mlperf_log_detail.txt"
    record = {
        "key": "error_runtime",
        "value": "Ending early: Ran out of generated queries to issue",
        "time_ms": 1.0,
        "namespace": "mlperf::logging",
        "event_type": "POINT_IN_TIME",
        "metadata": {"is_error": True, "is_warning": False, "file": "loadgen.cc", "line_no": 1},
    }
    with detail.open("a") as stream:
        stream.write(MLLOG + json.dumps(record) + "\n")


def _perf_detail(tree: Path, scenario: str = "Offline", audit: str = "") -> Path:
    base = scenario_dir(tree, scenario) / audit if audit else scenario_dir(tree, scenario)
    return base / "performance" / "run_1" / "mlperf_log_detail.txt"


BREAKAGES: dict[str, tuple[Callable[[Path], object], str, str, Kind]] = {
    # name: (break the tree, path the problem names, what its line says, kind)
    "missing file": (
        lambda t: _remove(scenario_dir(t) / "accuracy" / "accuracy.txt"),
        "Offline/accuracy/accuracy.txt",
        "missing (the accuracy run's score and hash)",
        Kind.LAYOUT,
    ),
    "extra file in audit run_1": (
        lambda t: (scenario_dir(t) / "TEST04" / "performance" / "run_1" / "result.json").write_text(
            "{}"
        ),
        "TEST04/performance/run_1/result.json",
        "not allowed in an audit's performance/run_1",
        Kind.LAYOUT,
    ),
    "empty user.conf": (
        lambda t: (scenario_dir(t) / "user.conf").write_text(""),
        "Offline/user.conf",
        "empty (the LoadGen settings the runs applied)",
        Kind.LAYOUT,
    ),
    "no calibration.md": (
        lambda t: _remove(t / "closed" / SUBMITTER / "documentation"),
        "closed/acme/documentation/calibration.md",
        "missing: the closed division documents its calibration",
        Kind.LAYOUT,
    ),
    "hidden leftover": (
        lambda t: (scenario_dir(t) / ".README.md.x.tmp").write_text("x"),
        "Offline/.README.md.x.tmp",
        "a hidden name",
        Kind.LAYOUT,
    ),
    "empty directory": (
        lambda t: (scenario_dir(t) / "notes").mkdir(),
        "Offline/notes",
        "an empty directory",
        Kind.LAYOUT,
    ),
    "system without description": (
        lambda t: _remove(system_json(t)),
        "systems/box.json",
        "missing: every system under results/ needs one",
        Kind.LAYOUT,
    ),
    "missing scenario": (
        lambda t: _remove(scenario_dir(t, "MultiStream")),
        "resnet50/MultiStream",
        "missing: a datacenter,edge system must submit resnet50 in SingleStream, MultiStream, Offline, Server",
        Kind.SCENARIOS,
    ),
    "datacenter system": (
        lambda t: edit_json(system_json(t), system_type="datacenter"),
        "results/box/resnet50",
        "resnet50 cannot be submitted as system type 'datacenter'",
        Kind.SCENARIOS,
    ),
    "empty system field": (
        lambda t: edit_json(system_json(t), host_storage_type=""),
        "systems/box.json",
        "field host_storage_type needs a meaningful value but is empty",
        Kind.SYSTEM,
    ),
    "integer 0 field": (
        lambda t: edit_json(system_json(t), accelerators_per_node=0),
        "systems/box.json",
        "field accelerators_per_node must be text, got 0",
        Kind.SYSTEM,
    ),
    "missing system field": (
        lambda t: edit_json(system_json(t), hw_notes=None),
        "systems/box.json",
        "field hw_notes is missing",
        Kind.SYSTEM,
    ),
    "wrong submitter": (
        lambda t: edit_json(system_json(t), submitter="other"),
        "systems/box.json",
        "submitter 'other' but the tree's is 'acme'",
        Kind.SYSTEM,
    ),
    "is_network in closed": (
        lambda t: edit_json(system_json(t), is_network="false"),
        "systems/box.json",
        "leave is_network out in the closed division",
        Kind.SYSTEM,
    ),
    "empty measurement": (
        lambda t: edit_json(scenario_dir(t) / "measurements.json", weight_transformations=""),
        "Offline/measurements.json",
        'weight_transformations is empty ("")',
        Kind.MEASUREMENTS,
    ),
    "accuracy below target": (
        lambda t: (scenario_dir(t) / "accuracy" / "accuracy.txt").write_text(
            "accuracy=70.000%, good=700, total=1000\nhash=" + "0" * 64 + "\n"
        ),
        "Offline/accuracy/accuracy.txt",
        "acc 70 is below resnet50's target 75.695",
        Kind.ACCURACY,
    ),
    "missing hash": (
        _drop_hash,
        "Offline/accuracy/accuracy.txt",
        "no hash= line",
        Kind.TRUNCATION,
    ),
    "untruncated big log": (
        _untruncate,
        "Offline/accuracy/mlperf_log_accuracy.json",
        "bytes: not truncated (at most 10,240",
        Kind.TRUNCATION,
    ),
    "badly truncated log": (
        lambda t: (scenario_dir(t) / "accuracy" / "mlperf_log_accuracy.json").write_text(
            "[\n" + "x" * 9000
        ),
        "Offline/accuracy/mlperf_log_accuracy.json",
        "neither a whole accuracy log nor truncated as MLCommons truncates",
        Kind.TRUNCATION,
    ),
    "INVALID run": (
        lambda t: set_values(_perf_detail(t, "Server"), result_validity="INVALID"),
        "Server/performance/run_1/mlperf_log_detail.txt",
        "LoadGen judged the performance run INVALID",
        Kind.VALIDITY,
    ),
    "LoadGen error line": (
        _add_loadgen_error,
        "SingleStream/performance/run_1/mlperf_log_detail.txt",
        "LoadGen logged an error: Ending early: Ran out of generated queries",
        Kind.LOADGEN_ERROR,
    ),
    "wrong seed": (
        lambda t: set_values(_perf_detail(t), effective_schedule_rng_seed=1),
        "Offline/performance/run_1/mlperf_log_detail.txt",
        "schedule_rng_seed is 1, v6.1's is 16159082839903944936",
        Kind.SETTINGS,
    ),
    "small performance sample count": (
        lambda t: set_values(_perf_detail(t), effective_performance_sample_count=64),
        "Offline/performance/run_1/mlperf_log_detail.txt",
        "performance_sample_count is 64, resnet50 needs at least 1024",
        Kind.DATASET_SIZE,
    ),
    "Server latency bound": (
        lambda t: set_values(_perf_detail(t, "Server"), effective_target_latency_ns=20_000_000),
        "Server/performance/run_1/mlperf_log_detail.txt",
        "target_latency_ns is 20000000, resnet50's Server bound is 15000000",
        Kind.LATENCY_BOUND,
    ),
    "small Offline query": (
        lambda t: set_values(_perf_detail(t, audit="TEST01"), effective_samples_per_query=220),
        "Offline/TEST01/performance/run_1/mlperf_log_detail.txt",
        "samples_per_query is 220, the closed division needs at least 24576",
        Kind.OFFLINE_SAMPLES_PER_QUERY,
    ),
    "early stopping not met": (
        lambda t: set_values(_perf_detail(t, "MultiStream"), early_stopping_met=False),
        "MultiStream/performance/run_1/mlperf_log_detail.txt",
        "early stopping not met",
        Kind.EARLY_STOPPING,
    ),
    "INVALID audit run": (
        lambda t: set_values(_perf_detail(t, "Server", "TEST04"), result_validity="INVALID"),
        "Server/TEST04/performance/run_1/mlperf_log_detail.txt",
        "LoadGen judged the TEST04 audit run INVALID",
        Kind.AUDIT_PERFORMANCE,
    ),
    "scenario mix-up": (
        lambda t: shutil.copy(_perf_detail(t, "Server"), _perf_detail(t, "SingleStream")),
        "SingleStream/performance/run_1/mlperf_log_detail.txt",
        "a Server run in the SingleStream directory",
        Kind.SETTINGS,
    ),
    "TEST01 FAIL": (
        lambda t: (scenario_dir(t) / "TEST01" / "verify_accuracy.txt").write_text("TEST FAIL\n"),
        "Offline/TEST01/verify_accuracy.txt",
        "TEST01's accuracy verification did not pass (TEST FAIL)",
        Kind.AUDIT,
    ),
    "TEST04 FAIL": (
        lambda t: (scenario_dir(t) / "TEST04" / "verify_performance.txt").write_text("TEST FAIL\n"),
        "Offline/TEST04/verify_performance.txt",
        "TEST04's performance verification did not pass: TEST FAIL",
        Kind.AUDIT_PERFORMANCE,
    ),
    "missing audit": (
        lambda t: _remove(scenario_dir(t, "MultiStream") / "TEST04"),
        "MultiStream/TEST04",
        "missing: v6.1 asks for the TEST04 audit",
        Kind.AUDIT,
    ),
    "not an audit run": (
        lambda t: shutil.copy(_perf_detail(t), _perf_detail(t, audit="TEST04")),
        "Offline/TEST04/performance/run_1/mlperf_log_detail.txt",
        "not a TEST04 audit run: performance_issue_same is False",
        Kind.AUDIT,
    ),
}


@pytest.mark.parametrize("name", BREAKAGES)
def test_each_problem_is_found_with_a_clear_line(name: str, tree: Path) -> None:
    breakage, path, message, kind = BREAKAGES[name]
    breakage(tree)
    problems = check_tree(tree)
    matching = [p for p in problems if p.path.as_posix().endswith(path) and message in p.message]
    assert matching, f"no {kind.value} problem for {path} saying {message!r} in:\n{lines(problems)}"
    assert all(p.kind is kind for p in matching)
    assert "\n" not in matching[0].line()


def test_cli_prints_one_line_per_problem(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_values(_perf_detail(tree), effective_qsl_rng_seed=7)
    edit_json(system_json(tree), cooling="")
    assert main([str(tree)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out[0].endswith(
        "systems/box.json: field cooling needs a meaningful value but is empty [system]"
    )
    assert "qsl_rng_seed is 7" in out[1]
    assert out[1].endswith("[settings]")


def test_truncated_logs_are_checked_against_the_full_logs(tree: Path) -> None:
    full = tree.parent / "full_logs"
    assert check_tree(tree, full_logs=full) == []
    log = full / scenario_dir(tree).relative_to(tree) / "accuracy" / "mlperf_log_accuracy.json"
    log.write_text(log.read_text().replace("]", ",{}]"))
    problems = check_tree(tree, full_logs=full)
    assert {p.kind for p in problems} == {Kind.TRUNCATION}
    assert "hash= is not the sha256 of the full log" in lines(problems)


def test_a_whole_small_log_must_match_its_hash(tree: Path) -> None:
    accuracy = scenario_dir(tree) / "accuracy"
    (accuracy / "mlperf_log_accuracy.json").write_text("[]")
    (accuracy / "accuracy.txt").write_text(
        "accuracy=76.500%, good=765, total=1000\nhash=" + "a" * 64 + "\n"
    )
    problems = check_tree(tree)
    assert [p.message for p in problems] == ["its sha256 is not accuracy.txt's hash= line"]


def test_test01_part_iii_accuracy_within_one_percent_passes(tree: Path) -> None:
    test01 = scenario_dir(tree) / "TEST01"
    (test01 / "verify_accuracy.txt").write_text("TEST FAIL\n")
    (test01 / "accuracy" / "baseline_accuracy.txt").write_text(
        "accuracy=76.500%, good=765, total=1000\n"
    )
    (test01 / "accuracy" / "compliance_accuracy.txt").write_text(
        "accuracy=76.000%, good=76, total=100\n"
    )
    assert check_tree(tree) == []
    (test01 / "accuracy" / "compliance_accuracy.txt").write_text(
        "accuracy=70.000%, good=70, total=100\n"
    )
    [problem] = check_tree(tree)
    assert problem.kind is Kind.AUDIT
    assert "TEST01 Part III" in problem.message


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["/nonexistent/tree"], "no staged tree at /nonexistent/tree"),
        (
            ["--inference_src", "/nonexistent"],
            "no MLCommons submission checker at /nonexistent/tools",
        ),
        ([], "the following arguments are required: tree"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], message: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv and argv[0] == "--inference_src":
        argv = [str(tree), *argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


FAKE_CHECKER = """\
import sys
args = sys.argv[1:]
print("[2026-01-01 00:00:00 main.py:1 INFO] args " + " ".join(args))
print("[2026-01-01 00:00:00 performance_check.py:2 ERROR] x/Offline Test duration less than 600s in user config. expected=600000, found=200", file=sys.stderr)
print("[2026-01-01 00:00:00 system_check.py:3 ERROR] x/box, field cooling requires a meaningful response but is empty", file=sys.stderr)
print("[2026-01-01 00:00:00 base.py:4 ERROR] Some performance Checks failed for: x/Offline", file=sys.stderr)
print("[2026-01-01 00:00:00 main.py:5 ERROR] SUMMARY: submission has errors", file=sys.stderr)
sys.exit(1)
"""


def test_mlcommons_checker_runs_and_its_log_is_kept(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "inference"
    script = source / "tools" / "submission" / "submission_checker" / "main.py"
    script.parent.mkdir(parents=True)
    script.write_text(FAKE_CHECKER)
    monkeypatch.setattr(preflight_mlcommons, "CHECKER_MODULES", ("json",))
    assert main([str(tree), "--inference_src", str(source), "--allow_short_runs"]) == 1
    captured = capsys.readouterr()
    log = (tree / "closed" / SUBMITTER / CHECKER_LOG).read_text()
    assert f"--input {tree.resolve()} --version v6.1 --submitter {SUBMITTER} --csv " in log
    assert "SUMMARY: submission has errors" in log
    out = captured.out.splitlines()
    assert len(out) == 2  # the summary lines repeat the errors above them
    assert out[0].startswith(
        f"closed/{SUBMITTER}/{CHECKER_LOG}: MLCommons' checker: x/Offline Test duration"
    )
    assert out[0].endswith("[min_duration] (allowed: short run)")
    assert out[1].endswith("field cooling requires a meaningful response but is empty [mlcommons]")
    assert "MLCommons' checker on acme: exit 1, 4 error line(s)" in captured.err


def test_checker_without_its_modules_is_one_line(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "inference"
    script = source / "tools" / "submission" / "submission_checker" / "main.py"
    script.parent.mkdir(parents=True)
    script.write_text(FAKE_CHECKER)
    monkeypatch.setattr(preflight_mlcommons, "CHECKER_MODULES", ("no_such_module_here",))
    assert (
        main([str(tree), "--inference_src", str(source), "--checker_python", sys.executable]) == 2
    )


def test_checker_exit_without_error_lines_is_a_problem() -> None:
    run = CheckerRun(
        "acme", 1, "Traceback (most recent call last):\nKeyError: 'status'\n", (Path("x.txt"),)
    )
    [problem] = checker_problems(run)
    assert problem.kind is Kind.MLCOMMONS
    assert "exited 1 without an error line: KeyError: 'status'" in problem.message


def test_a_known_defect_of_the_checker_is_reported_and_not_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The current checker's v5.0 entry has no GPT-J samples-per-query count: its closed Offline
    check raises for every GPT-J run (rounds/v5_0.py), which says nothing about the tree."""
    crash = (
        "[2026-11-28 12:09:53,760 base.py:31 ERROR] Execution occurred in running check "
        "/t/closed/acme/results/box/{model}/Offline/performance/run_1/mlperf_log_detail.txt. "
        "Running min_query_count_check in PerformanceCheck\n"
    )
    output = crash.format(model="gptj-99.9") + crash.format(model="resnet50")
    run = CheckerRun("acme", 1, output, (Path("x.txt"),), "v5.0")
    defect, other = checker_problems(run)
    assert defect.kind is Kind.CHECKER_DEFECT and "no GPT-J in OFFLINE_MIN_SPQ" in defect.message
    assert other.kind is Kind.MLCOMMONS  # the same crash for another model is no known defect
    assert report([defect], allow_short_runs=False) == 0
    assert "(not counted: the checker's own defect)" in capsys.readouterr().out
    # Only in the round whose checker has the defect.
    [v61] = checker_problems(CheckerRun("acme", 1, crash.format(model="gptj-99"), (), "v6.1"))
    assert v61.kind is Kind.MLCOMMONS


def test_the_checkers_accuracy_error_is_of_the_accuracy_kind() -> None:
    """v4.0's "<dir>, accuracy not valid" (RNN-T's stand-in below the official target): the
    accuracy kind, which a stand-in submission expects (pipeline._expected), like our own check's."""
    line = (
        "[2026-11-28 14:50:19,878 submission_checker.py:2978 ERROR] closed/acme/results/box/rnnt/"
        "Offline/accuracy, accuracy not valid\n"
    )
    [problem] = checker_problems(CheckerRun("acme", 1, line, (Path("x.txt"),), "v4.0"))
    assert problem.kind is Kind.ACCURACY
