"""Staging real run directories (LoadGen's logs from the harness with the null backend, their
result.json recast as ResNet-50 runs) into the v6.1 layout, the refusals, atomicity, and choosing
the newest complete set of runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import RESULT_FILE
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.runs import ScenarioRuns
from mlperf_harness.submission.select_runs import newest_complete_runs
from mlperf_harness.submission.stage import stage
from mlperf_harness.submission.stage_texts import git_state
from mlperf_harness.submission.system_description import (
    MEANINGFUL_FIELDS,
    REQUIRED_FIELDS,
    description_problems,
)

SYSTEM = "testbox"
SUBMITTER = "Acme"
ALL_SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")
EDGE_SCENARIOS = ("Offline", "SingleStream", "MultiStream")
SCENARIO_FLAGS = {
    "Offline": ["--offline_expected_qps", "2000"],
    "Server": ["--server_target_qps", "1000"],
    # By count over a 1 ms minimum: LoadGen never runs out of queries, whatever the machine.
    "SingleStream": ["--min_duration_ms", "1", "--min_query_count", "2000"],
    "MultiStream": ["--min_duration_ms", "1", "--min_query_count", "2000"],
}
SUMMARY, DETAIL = "mlperf_log_summary.txt", "mlperf_log_detail.txt"
ACCURACY_LOG = "mlperf_log_accuracy.json"


def _harness_run(log_dir: Path, scenario: str, mode: str) -> Path:
    argv = ["--scenario", scenario, "--test_mode", mode, "--log_dir", str(log_dir)]
    argv += ["--system_name", SYSTEM, "--min_duration_ms", "100", "--min_query_count", "32"]
    assert run_benchmark_cli(BENCHMARK, argv + SCENARIO_FLAGS[scenario]) == 0
    return log_dir


@pytest.fixture(scope="module")
def harness_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """One real performance and accuracy run per scenario, made once for the module."""
    root = tmp_path_factory.mktemp("harness")
    return {
        (scenario, mode): _harness_run(root / scenario / mode, scenario, mode)
        for scenario in ALL_SCENARIOS
        for mode in ("PerformanceOnly", "AccuracyOnly")
    }


@pytest.fixture(scope="module")
def engine_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An int8 engine in the engine cache, with the engine.json the cache writes beside it."""
    spec = EngineSpec(
        benchmark="resnet50",
        backend="onnxruntime",
        precision="int8",
        batch_size=0,
        model_sha256="ab" * 32,
        device="cpu-x86_64-avx2",
        builder_sha256="cd" * 32,
        calibration_sha256="ef" * 32,
        options=(("activations", "uint8"), ("format", "qdq"), ("weights", "int8-per-channel")),
    )

    def build(out_dir: Path) -> str:
        (out_dir / "model.onnx").write_bytes(b"engine")
        return "model.onnx"

    engine_file, _built = EngineCache(tmp_path_factory.mktemp("engines")).get_or_build(spec, build)
    return engine_file


def _as_resnet50(run_dir: Path, engine_file: Path, **changes: Any) -> None:
    """Recast a harness_overhead run's result.json as the ResNet-50 run it stands in for."""
    path = run_dir / RESULT_FILE
    record = json.loads(path.read_text())
    scenario = record["scenario"]
    record.update(
        benchmark="resnet50",
        backend="onnxruntime",
        stand_in=True,
        notice="stand-in: not a valid MLPerf result",
        model_sha256="ab" * 32,
        provenance={
            "model": "stand-in (generated)",
            "data": "generated images (stand-in)",
            "engine": str(engine_file),
            "engines": str(engine_file),
            "calibration": "the stand-in's own calibration split of generated images",
        },
        command=[
            "./pants",
            "run",
            f"benchmarks/resnet50:{scenario.lower()}",
            "--",
            "--test_mode",
            record["test_mode"],
        ],
        audit_test=None,
    )
    record["settings"]["precision"] = {"value": "int8", "from": "configs.ResNet50"}
    if record["test_mode"] == "PerformanceOnly":
        record["result_valid"] = True  # the verdict the test wants, whatever the short run gave
        record["invalid_reasons"] = []
    else:
        record["accuracy"] = {
            "top1_percent": 99.5,
            "good": 199,
            "total": 200,
            "reference_top1_percent": 99.67,
            "target_percent": 98.673,
            "passed": True,
        }
        (run_dir / "accuracy.txt").write_text("accuracy=99.500%, good=199, total=200\n")
    record.update(changes)
    path.write_text(json.dumps(record, indent=2))
    user_conf = run_dir / "user.conf"
    if not user_conf.exists():  # run_harness writes it; written here where it does not yet
        user_conf.write_text(f"resnet50.{scenario}.min_duration = 100\n")


def _verified_audit(
    out_dir: Path, test: AuditTest, audit_run: Path, *, passed: bool = True
) -> Path:
    """A TEST0x/ directory as verification writes it."""
    verdict = "TEST PASS" if passed else "TEST FAIL"
    run_1 = out_dir / "performance" / "run_1"
    run_1.mkdir(parents=True)
    for name in (SUMMARY, DETAIL):
        shutil.copyfile(audit_run / name, run_1 / name)
    (out_dir / "verify_performance.txt").write_text(
        f"reference score = 100.0\ntest score = 99.0\n{verdict}\n"
    )
    if test is AuditTest.TEST01:
        (out_dir / "verify_accuracy.txt").write_text(
            f"First 10 responses identical\n{'TEST PASS' if passed else 'TEST FAIL'}\n"
        )
        accuracy = out_dir / "accuracy"
        accuracy.mkdir()
        (accuracy / ACCURACY_LOG).write_text("[]\n")
        (accuracy / "accuracy.txt").write_text("accuracy=99.500%, good=199, total=200\n")
    return out_dir


@pytest.fixture
def make_runs(
    tmp_path: Path, harness_runs: dict[tuple[str, str], Path], engine_dir: Path
) -> Callable[..., ScenarioRuns]:
    """A complete, passing set of runs for one scenario, in this test's own directory."""
    counter = iter(range(1000))

    def make(scenario: str = "Offline") -> ScenarioRuns:
        base = tmp_path / "logs" / f"set{next(counter)}" / scenario
        performance = base / "PerformanceOnly"
        accuracy = base / "AccuracyOnly"
        shutil.copytree(harness_runs[(scenario, "PerformanceOnly")], performance)
        shutil.copytree(harness_runs[(scenario, "AccuracyOnly")], accuracy)
        _as_resnet50(performance, engine_dir)
        _as_resnet50(accuracy, engine_dir)
        audits = {
            test: _verified_audit(base / "verified" / test.value, test, performance)
            for test in (AuditTest.TEST01, AuditTest.TEST04)
        }
        return ScenarioRuns(
            SYSTEM,
            "resnet50",
            "resnet50",
            Scenario.parse(scenario),
            performance,
            accuracy,
            audits,
        )

    return make


def _description(system_type: str = "datacenter,edge") -> dict[str, str]:
    description = {field: "N/A" if field in MEANINGFUL_FIELDS else "" for field in REQUIRED_FIELDS}
    description.update(
        division="closed",
        submitter=SUBMITTER,
        status="available",
        system_type=system_type,
        system_name=SYSTEM,
        number_of_nodes="1",
        accelerators_per_node="0",
    )
    assert description_problems(description, division="closed", submitter=SUBMITTER) == []
    return description


def _stage(runs: list[ScenarioRuns], tree: Path, **kwargs: Any) -> Path:
    arguments: dict[str, Any] = {
        "division": "closed",
        "submitter": SUBMITTER,
        "system_descriptions": {SYSTEM: _description()},
    }
    arguments.update(kwargs)
    return stage(runs, tree, **arguments)


def _files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def test_layout_of_a_four_scenario_submission(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    runs = [make_runs(scenario) for scenario in ALL_SCENARIOS]
    tree = tmp_path / "tree"
    root = _stage(runs, tree, source_dir=tmp_path / "not-a-checkout")
    assert root == tree / "closed" / SUBMITTER
    expected = {
        f"systems/{SYSTEM}.json",
        "src/README.md",
        "documentation/calibration.md",
    }
    for scenario in ALL_SCENARIOS:
        base = f"results/{SYSTEM}/resnet50/{scenario}"
        expected |= {
            f"{base}/performance/run_1/{SUMMARY}",
            f"{base}/performance/run_1/{DETAIL}",
            f"{base}/accuracy/{SUMMARY}",
            f"{base}/accuracy/{DETAIL}",
            f"{base}/accuracy/{ACCURACY_LOG}",
            f"{base}/accuracy/accuracy.txt",
            f"{base}/measurements.json",
            f"{base}/user.conf",
            f"{base}/README.md",
            f"{base}/TEST01/verify_accuracy.txt",
            f"{base}/TEST01/verify_performance.txt",
            f"{base}/TEST01/performance/run_1/{SUMMARY}",
            f"{base}/TEST01/performance/run_1/{DETAIL}",
            f"{base}/TEST01/accuracy/{ACCURACY_LOG}",
            f"{base}/TEST01/accuracy/accuracy.txt",
            f"{base}/TEST04/verify_performance.txt",
            f"{base}/TEST04/performance/run_1/{SUMMARY}",
            f"{base}/TEST04/performance/run_1/{DETAIL}",
        }
    assert _files(root) == expected
    assert list(tree.iterdir()) == [tree / "closed"]  # no staging directory left behind

    offline = root / "results" / SYSTEM / "resnet50" / "Offline"
    performance_dir = runs[0].performance_dir
    assert (offline / "performance/run_1" / DETAIL).read_bytes() == (
        performance_dir / DETAIL
    ).read_bytes()
    assert (offline / "user.conf").read_text() == (performance_dir / "user.conf").read_text()
    assert json.loads((offline / "measurements.json").read_text()) == {
        "input_data_types": "fp32",
        "retraining": "No",
        "starting_weights_filename": (
            "the stand-in model generated by mlperf_harness, not MLPerf's weights"
        ),
        "weight_data_types": "int8",
        "weight_transformations": (
            "post-training quantization to int8 (see documentation/calibration.md)"
        ),
    }
    readme = (offline / "README.md").read_text()
    assert "stand-in: not a valid MLPerf result" in readme
    assert "./pants run benchmarks/resnet50:offline -- --test_mode PerformanceOnly" in readme
    assert "./pants run benchmarks/resnet50:offline -- --test_mode AccuracyOnly" in readme
    assert "`onnxruntime` backend at `int8` precision" in readme
    assert "| performance | VALID, " in readme
    assert "| accuracy | top-1 99.5% (199/200), target 98.673%, passed |" in readme
    assert "| precision | int8 | configs.ResNet50 |" in readme

    system = json.loads((root / "systems" / f"{SYSTEM}.json").read_text())
    assert system == _description()
    calibration = (root / "documentation" / "calibration.md").read_text()
    assert "## resnet50 on testbox: onnxruntime (Offline, Server, SingleStream, MultiStream)" in (
        calibration
    )
    assert "int8, calibrated on the stand-in's own calibration split" in calibration
    assert "calibration sha256 " + "ef" * 32 in calibration
    assert "activations uint8, format qdq, weights int8-per-channel" in calibration
    source = (root / "src" / "README.md").read_text()
    assert "- commit: unknown" in source
    assert "- working tree: unknown" in source


def test_no_result_json_in_the_tree(make_runs: Callable[..., ScenarioRuns], tmp_path: Path) -> None:
    runs = make_runs("Offline")
    # A verification that (wrongly) left result.json in performance/run_1 is refused, not staged.
    shutil.copyfile(
        runs.performance_dir / RESULT_FILE,
        runs.audit_dirs[AuditTest.TEST04] / "performance" / "run_1" / RESULT_FILE,
    )
    with pytest.raises(HarnessError, match=r"performance/run_1 may hold only LoadGen's logs"):
        _stage([runs], tmp_path / "tree", system_descriptions={SYSTEM: _description("edge")})
    (runs.audit_dirs[AuditTest.TEST04] / "performance" / "run_1" / RESULT_FILE).unlink()
    root = _stage([runs], tmp_path / "tree", system_descriptions={SYSTEM: _description("edge")})
    assert not [path for path in root.rglob(RESULT_FILE)]


def _set_record(run_dir: Path, **changes: Any) -> None:
    path = run_dir / RESULT_FILE
    record = json.loads(path.read_text())
    record.update(changes)
    path.write_text(json.dumps(record))


def _invalid(runs: ScenarioRuns) -> None:
    _set_record(runs.performance_dir, result_valid=False, invalid_reasons=["min duration"])


def _below_target(runs: ScenarioRuns) -> None:
    record = json.loads((runs.accuracy_dir / RESULT_FILE).read_text())
    _set_record(runs.accuracy_dir, accuracy={**record["accuracy"], "passed": False})


def _fail_test04(runs: ScenarioRuns) -> None:
    (runs.audit_dirs[AuditTest.TEST04] / "verify_performance.txt").write_text("TEST FAIL\n")


def _fail_test01_accuracy(runs: ScenarioRuns) -> None:
    (runs.audit_dirs[AuditTest.TEST01] / "verify_accuracy.txt").write_text("TEST FAIL\n")


def _other_precision(runs: ScenarioRuns) -> None:
    record = json.loads((runs.accuracy_dir / RESULT_FILE).read_text())
    record["settings"]["precision"]["value"] = "fp32"
    (runs.accuracy_dir / RESULT_FILE).write_text(json.dumps(record))


def _audit_as_performance(runs: ScenarioRuns) -> None:
    _set_record(runs.performance_dir, audit_test="TEST04")


def _no_result_json(runs: ScenarioRuns) -> None:
    (runs.accuracy_dir / RESULT_FILE).unlink()


def _other_system(runs: ScenarioRuns) -> None:
    _set_record(runs.performance_dir, system_name="otherbox")


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_invalid, r"performance run \S+ is INVALID \(min duration\)"),
        (_below_target, r"accuracy run \S+ is below target \(top-1 99.5%"),
        (lambda runs: runs.audit_dirs.pop(AuditTest.TEST04), "TEST04 is missing"),
        (lambda runs: shutil.rmtree(runs.audit_dirs[AuditTest.TEST01]), r"TEST01 \S+ is missing"),
        (_fail_test04, "the performance verification failed"),
        (_fail_test01_accuracy, "the accuracy verification failed"),
        (
            lambda runs: (runs.performance_dir / SUMMARY).unlink(),
            f"PerformanceOnly lacks {SUMMARY}",
        ),
        (lambda runs: (runs.performance_dir / "user.conf").unlink(), "lacks user.conf"),
        (lambda runs: (runs.accuracy_dir / "accuracy.txt").unlink(), "lacks accuracy.txt"),
        (
            lambda runs: (runs.audit_dirs[AuditTest.TEST01] / "accuracy" / ACCURACY_LOG).unlink(),
            f"lacks accuracy/{ACCURACY_LOG}",
        ),
        (_other_precision, "the accuracy run .* measured another backend, precision or model"),
        (_audit_as_performance, "is not a performance run"),
        (_no_result_json, "holds no result.json"),
        (_other_system, "has system_name 'otherbox'"),
    ],
)
def test_refusals_are_one_line_and_leave_no_tree(
    make_runs: Callable[..., ScenarioRuns],
    tmp_path: Path,
    spoil: Callable[[ScenarioRuns], object],
    message: str,
) -> None:
    runs = make_runs("Offline")
    spoil(runs)
    tree = tmp_path / "tree"
    with pytest.raises(HarnessError, match=message) as raised:
        _stage([runs], tree)
    text = str(raised.value)
    assert text.startswith("cannot stage: resnet50 Offline on testbox: ")
    assert "\n" not in text
    assert not tree.exists()


def test_allow_invalid_stages_verdicts_but_not_gaps(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    runs = make_runs("Offline")
    _invalid(runs)
    _below_target(runs)
    _fail_test04(runs)
    root = _stage([runs], tmp_path / "tree", allow_invalid=True)
    readme = (root / "results" / SYSTEM / "resnet50" / "Offline" / "README.md").read_text()
    assert "| performance | INVALID, " in readme
    assert ", below target |" in readme
    assert "| TEST01 | passed (see `TEST01/`) |" in readme
    assert "| TEST04 | FAILED: TEST04 " in readme
    assert "the performance verification failed" in readme
    (runs.accuracy_dir / "accuracy.txt").unlink()
    with pytest.raises(HarnessError, match=r"lacks accuracy\.txt") as raised:
        _stage([runs], tmp_path / "tree", allow_invalid=True)
    assert "INVALID" not in str(raised.value)


def test_test01_part_three_passes_within_one_percent(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    runs = make_runs("Offline")
    test01 = runs.audit_dirs[AuditTest.TEST01]
    (test01 / "verify_accuracy.txt").write_text("TEST FAIL\n")
    (test01 / "accuracy" / "baseline_accuracy.txt").write_text("accuracy=99.500%, good=199\n")
    (test01 / "accuracy" / "compliance_accuracy.txt").write_text("accuracy=99.000%, good=99\n")
    _stage([runs], tmp_path / "tree")
    (test01 / "accuracy" / "compliance_accuracy.txt").write_text("accuracy=90.000%, good=90\n")
    with pytest.raises(HarnessError, match="the accuracy verification failed"):
        _stage([runs], tmp_path / "tree")


def test_system_type_decides_the_scenarios(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    server = make_runs("Server")
    with pytest.raises(HarnessError, match=r"a 'edge' system submits resnet50 in .*, not Server"):
        _stage([server], tmp_path / "tree", system_descriptions={SYSTEM: _description("edge")})
    with pytest.raises(HarnessError, match="cannot be submitted as system type 'datacenter'"):
        _stage(
            [make_runs("Offline")],
            tmp_path / "tree",
            system_descriptions={SYSTEM: _description("datacenter")},
        )


def test_system_description_is_checked(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    runs = [make_runs("Offline")]
    with pytest.raises(HarnessError, match="no system description for testbox"):
        _stage(runs, tmp_path / "tree", system_descriptions={})
    description = {**_description(), "cooling": ""}
    with pytest.raises(HarnessError, match=r"systems/testbox\.json: field cooling needs a meaning"):
        _stage(runs, tmp_path / "tree", system_descriptions={SYSTEM: description})
    with pytest.raises(HarnessError, match="submitter 'Acme' but the tree's is 'Other'"):
        _stage(runs, tmp_path / "tree", submitter="Other")
    with pytest.raises(HarnessError, match="named twice"):
        _stage(runs * 2, tmp_path / "tree")


def test_empty_user_conf_says_why(make_runs: Callable[..., ScenarioRuns], tmp_path: Path) -> None:
    runs = make_runs("Offline")
    (runs.performance_dir / "user.conf").write_text("")
    root = _stage([runs], tmp_path / "tree")
    user_conf = root / "results" / SYSTEM / "resnet50" / "Offline" / "user.conf"
    assert user_conf.read_text().startswith("# This run applied no LoadGen settings")


def test_restaging_replaces_the_tree(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    root = _stage([make_runs("Offline"), make_runs("Server")], tree)
    (root / "stray.txt").write_text("left over")
    other_submitter = tree / "closed" / "Other"
    other_submitter.mkdir()
    _stage([make_runs("SingleStream")], tree)
    assert sorted(path.name for path in (root / "results" / SYSTEM / "resnet50").iterdir()) == [
        "SingleStream"
    ]
    assert not (root / "stray.txt").exists()
    assert other_submitter.is_dir()  # only this submitter's directory is replaced
    assert sorted(path.name for path in tree.iterdir()) == ["closed"]


def test_interrupted_staging_leaves_the_old_tree_or_none(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    seen: list[set[str]] = []

    def interrupt(staging_root: Path) -> None:
        seen.append(_files(staging_root / "closed" / SUBMITTER))
        raise KeyboardInterrupt

    runs = make_runs("Offline")
    with pytest.raises(KeyboardInterrupt):
        _stage([runs], tree, before_commit=interrupt)
    assert f"results/{SYSTEM}/resnet50/Offline/measurements.json" in seen[0]  # complete before
    assert not (tree / "closed").exists()
    assert list(tree.iterdir()) == []

    root = _stage([runs], tree)
    before = _files(root)
    with pytest.raises(KeyboardInterrupt):
        _stage([make_runs("Server")], tree, before_commit=interrupt)
    assert _files(root) == before
    assert sorted(path.name for path in tree.iterdir()) == ["closed"]

    # A staging directory a killed process left behind goes with the next staging.
    (tree / ".staging-killed" / "closed").mkdir(parents=True)
    _stage([runs], tree)
    assert sorted(path.name for path in tree.iterdir()) == ["closed"]


def test_before_commit_can_finish_the_tree(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    def truncate(staging_root: Path) -> None:
        for path in staging_root.rglob("accuracy.txt"):
            path.write_text(path.read_text() + "hash=0123\n")

    root = _stage([make_runs("Offline")], tmp_path / "tree", before_commit=truncate)
    accuracy = root / "results" / SYSTEM / "resnet50" / "Offline" / "accuracy" / "accuracy.txt"
    assert accuracy.read_text().endswith("hash=0123\n")


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "checkout"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(repo), *command], check=True, env=env)
    yield repo


def test_source_readme_names_the_commit(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path, checkout: Path
) -> None:
    commit, state = git_state(checkout)
    assert len(commit) == 40 and state == "clean"
    (checkout / "new.py").write_text("")
    assert git_state(checkout) == (commit, "dirty: 1 changed files")
    root = _stage([make_runs("Offline")], tmp_path / "tree", source_dir=checkout)
    source = (root / "src" / "README.md").read_text()
    assert f"- commit: {commit}" in source
    assert "- working tree: dirty: 1 changed files" in source


# --- choosing the newest complete set ------------------------------------------------------------


def _audit_run(
    log_root: Path, name: str, test: AuditTest, reference: ScenarioRuns, *, passed: bool = True
) -> Path:
    """An audit run (result.json with audit_test) and its verification, in the submission
    pipeline's layout: <name>/run and <name>/TEST0x; returns the verification."""
    run_dir = log_root / name / "run"
    shutil.copytree(reference.performance_dir, run_dir)
    _set_record(run_dir, audit_test=test.value)
    return _verified_audit(log_root / name / test.value, test, run_dir, passed=passed)


def _move(runs: ScenarioRuns, log_root: Path, name: str) -> ScenarioRuns:
    """The performance and accuracy runs of `runs` under log_root, without their audits."""
    performance = shutil.copytree(runs.performance_dir, log_root / name / "performance")
    accuracy = shutil.copytree(runs.accuracy_dir, log_root / name / "accuracy")
    for run_dir in (performance, accuracy):
        os.utime(run_dir / RESULT_FILE)  # written now: later than anything before
    return ScenarioRuns(
        runs.system, runs.model, runs.benchmark, runs.scenario, performance, accuracy, {}
    )


def test_newest_complete_set_is_chosen(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    log_root = tmp_path / "build" / "logs"
    first = _move(make_runs("Offline"), log_root, "first")
    first_audits = {
        test: _audit_run(log_root, f"first-{test.value}", test, first)
        for test in (AuditTest.TEST01, AuditTest.TEST04)
    }
    # A later performance run without audits of its own: the earlier set is still the newest
    # complete one.
    second = _move(make_runs("Offline"), log_root, "second")
    selection = newest_complete_runs(log_root)
    assert selection.incomplete == ()
    [chosen] = selection.runs
    assert (chosen.system, chosen.model, chosen.benchmark) == (SYSTEM, "resnet50", "resnet50")
    assert chosen.scenario is Scenario.OFFLINE
    assert chosen.performance_dir == first.performance_dir
    assert chosen.audit_dirs == first_audits
    # Not the newer accuracy run: TEST01 compared the audit with the accuracy run before it.
    assert chosen.accuracy_dir == first.accuracy_dir

    # Audits verified after the second set complete it.
    second_audits = {
        test: _audit_run(log_root, f"second-{test.value}", test, second)
        for test in (AuditTest.TEST01, AuditTest.TEST04)
    }
    [chosen] = newest_complete_runs(log_root).runs
    assert chosen.performance_dir == second.performance_dir
    assert chosen.accuracy_dir == second.accuracy_dir
    assert chosen.audit_dirs == second_audits
    # The chosen set stages.
    _stage(list(newest_complete_runs(log_root).runs), tmp_path / "tree")

    # An INVALID newest performance run does not count.
    _set_record(second.performance_dir, result_valid=False)
    [chosen] = newest_complete_runs(log_root).runs
    assert chosen.performance_dir == first.performance_dir


def test_incomplete_sets_say_what_is_missing(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    log_root = tmp_path / "build"  # not the fixture's own "logs"
    runs = _move(make_runs("SingleStream"), log_root, "only")
    for run_dir in (runs.performance_dir, runs.accuracy_dir):
        _set_record(run_dir, stand_in=False)  # a stand-in's runs would be taken as they are
    _audit_run(log_root, "test01", AuditTest.TEST01, runs)
    failed = _audit_run(log_root, "test04", AuditTest.TEST04, runs, passed=False)
    selection = newest_complete_runs(log_root)
    assert selection.runs == ()
    [line] = selection.incomplete
    assert line.startswith("resnet50 SingleStream on testbox: no passing TEST04 verified after")
    # --allow_invalid takes the set with its failed audit, as staging would stage it.
    [chosen] = newest_complete_runs(log_root, allow_invalid=True).runs
    assert chosen.audit_dirs[AuditTest.TEST04] == failed

    _below_target(runs)
    [line] = newest_complete_runs(log_root).incomplete
    assert line.startswith("resnet50 SingleStream on testbox: no passing accuracy run like")

    _invalid(runs)
    assert newest_complete_runs(log_root).incomplete == (
        "resnet50 SingleStream on testbox: no VALID performance run",
    )
    # Benchmarks that are no submission model (harness_overhead) are not considered.
    assert newest_complete_runs(log_root, models={}).incomplete == ()


# --- earlier rounds ------------------------------------------------------------------------------


def _for_round(runs: ScenarioRuns, round_name: str) -> ScenarioRuns:
    for run_dir in (runs.performance_dir, runs.accuracy_dir):
        _set_record(run_dir, round=round_name)
    return runs


def test_layout_before_v6_0(make_runs: Callable[..., ScenarioRuns], tmp_path: Path) -> None:
    runs = [_for_round(make_runs(scenario), "v5.0") for scenario in EDGE_SCENARIOS]
    root = _stage(
        runs,
        tmp_path / "tree",
        round_name="v5.0",
        system_descriptions={SYSTEM: _description("edge")},
        source_dir=tmp_path / "not-a-checkout",
    )
    expected = {f"systems/{SYSTEM}.json", "code/README.md", "documentation/calibration.md"}
    # The v5.0 tag's checker also looks for code/<model>/<implementation>/ (as v4.0's did).
    expected.add("code/resnet50/mlperf_harness/README.md")
    for scenario in EDGE_SCENARIOS:
        result = f"results/{SYSTEM}/resnet50/{scenario}"
        measurements = f"measurements/{SYSTEM}/resnet50/{scenario}"
        compliance = f"compliance/{SYSTEM}/resnet50/{scenario}"
        expected |= {
            f"{result}/performance/run_1/{SUMMARY}",
            f"{result}/performance/run_1/{DETAIL}",
            *(f"{result}/accuracy/{name}" for name in (SUMMARY, DETAIL, ACCURACY_LOG)),
            f"{result}/accuracy/accuracy.txt",
            f"{measurements}/{SYSTEM}_mlperf_harness_{scenario}.json",
            f"{measurements}/user.conf",
            f"{measurements}/README.md",
            f"{compliance}/TEST01/verify_accuracy.txt",
            f"{compliance}/TEST01/verify_performance.txt",
            f"{compliance}/TEST01/performance/run_1/{SUMMARY}",
            f"{compliance}/TEST01/performance/run_1/{DETAIL}",
            f"{compliance}/TEST01/accuracy/{ACCURACY_LOG}",
            f"{compliance}/TEST01/accuracy/accuracy.txt",
            f"{compliance}/TEST04/verify_performance.txt",
            f"{compliance}/TEST04/performance/run_1/{SUMMARY}",
            f"{compliance}/TEST04/performance/run_1/{DETAIL}",
        }
    assert _files(root) == expected
    readme = (root / f"measurements/{SYSTEM}/resnet50/Offline/README.md").read_text()
    assert f"| TEST01 | passed (see `compliance/{SYSTEM}/resnet50/Offline/TEST01/`) |" in readme
    assert "see `code/README.md`" in readme


def test_v4_0_wants_test05_mlperf_conf_and_code_per_model(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    runs = _for_round(make_runs("Offline"), "v4.0")
    with pytest.raises(HarnessError, match="TEST05 is missing"):
        _stage([runs], tmp_path / "tree", round_name="v4.0")
    runs.audit_dirs[AuditTest.TEST05] = _verified_audit(
        runs.performance_dir.parent / "verified" / "TEST05", AuditTest.TEST05, runs.performance_dir
    )
    root = _stage([runs], tmp_path / "tree", round_name="v4.0")
    measurements = root / "measurements" / SYSTEM / "resnet50" / "Offline"
    conf = (measurements / "mlperf.conf").read_text()
    assert "resnet50.Offline.min_duration = 600000" in conf
    assert "*.*.qsl_rng_seed = " in conf  # the seeds the run's detail log shows
    assert (root / "code" / "resnet50" / "mlperf_harness" / "README.md").is_file()
    assert (root / "compliance" / SYSTEM / "resnet50" / "Offline" / "TEST05").is_dir()
    # v5.0 has no TEST05: a set that brings one is refused.
    with pytest.raises(HarnessError, match=r"v5\.0 has no TEST05 for resnet50"):
        _stage([_for_round(runs, "v5.0")], tmp_path / "tree", round_name="v5.0")


def test_runs_made_for_another_round_are_refused_in_one_line(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    runs = make_runs("Offline")  # recorded before rounds were: v6.1's
    with pytest.raises(HarnessError) as raised:
        _stage([runs], tmp_path / "tree", round_name="v5.1")
    text = str(raised.value)
    assert "\n" not in text
    assert text.startswith("cannot stage: resnet50 Offline on testbox: runs made for another round")
    assert "for v6.1): run them with --round v5.1" in text
    assert not (tmp_path / "tree").exists()
    _for_round(runs, "v5.1")
    _stage([runs], tmp_path / "tree", round_name="v5.1")


def test_selection_keeps_to_the_round(
    make_runs: Callable[..., ScenarioRuns], tmp_path: Path
) -> None:
    log_root = tmp_path / "logs-v6.1"
    runs = _move(make_runs("Offline"), log_root, "set")
    for test in (AuditTest.TEST01, AuditTest.TEST04):
        _audit_run(log_root, f"set-{test.value}", test, runs)
    assert len(newest_complete_runs(log_root).runs) == 1
    selection = newest_complete_runs(log_root, round_name="v6.0")
    assert selection.runs == ()
    assert selection.incomplete == (
        "resnet50 Offline on testbox: runs made for v6.1 only, not v6.0 (run them with"
        " --round v6.0)",
    )
