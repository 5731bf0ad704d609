"""The round tables (submission/rounds/) and what a round changes: the facts and where each was
read, --round on the run targets, :submission and :submission_check, a run's seeds and its record,
audits not run yet, the preflight check of a tree staged before v6.0, and which MLCommons checker
runs with which --version."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.catalog import load_benchmark
from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.cli.options import parse_run_options
from mlperf_harness.cli.submission import parse_request
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import read_detail_log
from mlperf_harness.loadgen.settings import LoadgenSettings, RoundSeeds, Scenario, to_test_settings
from mlperf_harness.submission import preflight_mlcommons, rules
from mlperf_harness.submission.preflight import Kind, check_tree
from mlperf_harness.submission.preflight import main as check_main
from mlperf_harness.submission.preflight_mlcommons import CHECKER_LOG
from mlperf_harness.submission.round_run import builtin_seeds, round_seeds
from mlperf_harness.submission.rounds import DEFAULT_ROUND, ROUNDS, get_round, parse_round
from mlperf_harness.submission.rounds.facts import (
    CURRENT_CHECKER_COMMIT,
    FACTS,
    AuditTest,
    check_runnable,
)
from mlperf_harness.submission.runs import ScenarioRuns
from mlperf_harness.submission.stage_checks import scenario_problems

SEED_NAMES = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")

# --- the tables ----------------------------------------------------------------------------------


def test_every_fact_of_every_round_says_where_it_was_read() -> None:
    for table in ROUNDS.values():
        assert set(table.sources) == set(FACTS), table.name
        sources = list(table.sources.values())
        sources += [s for rules_ in table.models.values() for s in rules_.sources.values()]
        for source in sources:
            assert source.path.startswith(("tools/submission/", "compliance/")), source
            assert source.ref in ("v4.0", "v5.0", CURRENT_CHECKER_COMMIT), source
            assert "mlcommons/inference" in str(source)
        for model in table.models.values():
            assert set(model.sources) <= set(FACTS)
            for metric, _target in model.accuracy:
                re.compile(table.accuracy_patterns[metric])  # every metric has its pattern
            assert all(test in table.models[model.model].audits for test in model.audits)
        # Our model directory names are the checker's, or its mapping of them (resnet50).
        assert {m.checker_model or m.model for m in table.models.values()} <= set(
            table.listed_models
        )


def test_v6_1_names_are_read_from_its_table() -> None:
    current = ROUNDS[DEFAULT_ROUND]
    assert DEFAULT_ROUND == rules.ROUND == "v6.1"
    assert rules.MODELS is current.models
    assert rules.SEEDS is current.seeds
    assert rules.model_rules("resnet50") is current.models["resnet50"]
    # The pinned LoadGen carries v6.1's seeds: a v6.1 run sets none of its own.
    assert builtin_seeds() == tuple(current.seeds[name] for name in SEED_NAMES)


@pytest.mark.parametrize(
    ("round_name", "qsl_rng_seed"),
    [
        ("v6.1", 2085463073848966840),
        ("v6.0", 2465351861681999779),
        ("v5.1", 1780908523862526354),
        ("v5.0", 6023615788873153749),
        ("v4.0", 13281865557512327830),
    ],
)
def test_each_round_has_its_own_seeds(round_name: str, qsl_rng_seed: int) -> None:
    assert ROUNDS[round_name].seeds["qsl_rng_seed"] == qsl_rng_seed


def test_each_retired_benchmark_is_in_its_last_round_and_not_after() -> None:
    last = {"retinanet": "v6.0", "dlrm-v2-99": "v5.1", "gptj-99": "v5.0", "rnnt": "v4.0"}
    order = list(ROUNDS)  # newest first
    for model, round_name in last.items():
        assert model in ROUNDS[round_name].models
        for newer in order[: order.index(round_name)]:
            assert model not in ROUNDS[newer].models, (model, newer)


def test_what_changed_between_rounds() -> None:
    v61, v60, v51, v50, v40 = (ROUNDS[name] for name in ("v6.1", "v6.0", "v5.1", "v5.0", "v4.0"))
    # ResNet-50 lost its plain "datacenter" entry in v5.1.
    assert v50.model("resnet50").required_scenarios("datacenter") == (
        Scenario.SERVER,
        Scenario.OFFLINE,
    )
    with pytest.raises(HarnessError, match="cannot be submitted as system type 'datacenter'"):
        v51.model("resnet50").required_scenarios("datacenter")
    # v4.0 audits every model with TEST01 again under TEST05's seeds, and has BERT's Server.
    assert v40.model("resnet50").audits == (AuditTest.TEST01, AuditTest.TEST04, AuditTest.TEST05)
    assert v40.model("bert-99").audits == (AuditTest.TEST01, AuditTest.TEST05)
    assert v40.model("bert-99").server_latency_ns == 130_000_000
    assert v40.test05_seeds is not None and v50.test05_seeds is None
    assert v40.model("resnet50").dataset_size is None  # its checker has no dataset-size table
    assert v50.model("gptj-99").audits == (AuditTest.TEST06,)
    # The layout changed in v6.0.
    assert (v61.layout, v60.layout.source_dir) == (v60.layout, "src")
    assert (v51.layout.source_dir, v51.layout.audits_root, v51.layout.measurements_root) == (
        "code",
        "compliance",
        "measurements",
    )
    assert v40.layout.measurement_files == ("mlperf.conf", "user.conf", "README.md")
    assert v40.layout.code_per_model and v50.layout.code_per_model  # the v5.0 tag's script
    assert not v51.layout.code_per_model
    # Which checker: the current one holds v5.0 to v6.1; v4.0's is the tag's single script.
    assert (v50.checker.script, v50.checker.version) == (
        "tools/submission/submission_checker/main.py",
        "v5.0",
    )
    assert (v40.checker.script, v40.checker.ref) == (
        "tools/submission/submission_checker.py",
        "v4.0",
    )
    # v4.0's accuracy line must start with "accuracy=".
    acc = re.compile(v40.accuracy_patterns["acc"])
    assert acc.match("accuracy=76.500%, good=765, total=1000")
    assert not acc.match('{"accuracy": 76.5}')
    assert re.match(v61.accuracy_patterns["acc"], '{"accuracy": 76.5}')


def test_every_audit_a_round_lists_is_run() -> None:
    """TEST06 (GPT-J in v5.0) is run and verified since GPT-J: no round lists an audit this
    harness refuses."""
    for table in ROUNDS.values():
        for model in table.models.values():
            for test in model.audits:
                check_runnable(test, f"{model.model} in {table.name}")


def test_a_missing_test06_is_refused_in_one_line(tmp_path: Path) -> None:
    runs = ScenarioRuns(
        "box", "gptj-99", "gptj", Scenario.OFFLINE, tmp_path / "perf", tmp_path / "acc"
    )
    problems = scenario_problems(runs, round_name="v5.0")
    assert any(p.endswith("TEST06 is missing (no verified audit given)") for p in problems)
    assert all("\n" not in p for p in problems)
    # The script at the v5.0 tag reads GPT-J's ROUGE only unquoted; the table follows it.
    rouge1 = re.compile(get_round("v5.0").accuracy_patterns["ROUGE1"])
    assert rouge1.match("{'rouge1': 42.9865, 'rouge2': 20.1235}")
    assert not rouge1.match("{'rouge1': '42.9865', 'rouge2': '20.1235'}")


# --- --round -------------------------------------------------------------------------------------


def test_round_flags() -> None:
    assert parse_run_options([], "resnet50").round == "v6.1"
    assert parse_run_options(["--round", "v5.0"], "resnet50").round == "v5.0"
    # Every way a benchmark's flags become a run (the run targets, the submission's child runs,
    # the raw-speed scripts) takes the benchmark's own default round.
    assert load_benchmark("retinanet").parse_options([]).round == "v6.0"
    assert load_benchmark("gptj").parse_options(["--round", "v4.0"]).round == "v4.0"
    assert parse_round("5.1") == "v5.1"
    request = parse_request(["--benchmarks", "resnet50", "--submitter", "X", "--round", "v4.0"])
    assert request.round == "v4.0" and "--round" not in request.run_args
    assert parse_request(["--benchmarks", "resnet50", "--submitter", "X"]).round == "v6.1"
    # Without --round: the newest round listing every benchmark asked for.
    assert parse_request(["--benchmarks", "gptj", "--submitter", "X"]).round == "v5.0"
    assert parse_request(["--benchmarks", "resnet50,dlrm-v2", "--submitter", "X"]).round == "v5.1"
    with pytest.raises(HarnessError, match=r"unknown round 'v3\.1': choose one of v6\.1, v6\.0"):
        get_round("v3.1")


def test_unknown_round_on_a_run_target_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_benchmark_cli(BENCHMARK, ["--round", "v3.1", "--log_dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown round 'v3.1'" in err and len(err.splitlines()) == 1


def test_round_seeds() -> None:
    assert round_seeds("v6.1", None) is None  # the pinned LoadGen's own
    v50 = round_seeds("v5.0", AuditTest.TEST01)
    assert v50 is not None and v50.test05 is None
    assert v50.qsl_rng_seed == ROUNDS["v5.0"].seeds["qsl_rng_seed"]
    test05 = round_seeds("v4.0", AuditTest.TEST05)
    assert test05 is not None
    assert test05.test05 == tuple(ROUNDS["v4.0"].test05_seeds[n] for n in SEED_NAMES)  # type: ignore[index]
    with pytest.raises(HarnessError, match=r"v5\.0 has no TEST05"):
        round_seeds("v5.0", AuditTest.TEST05)


def test_loadgen_settings_carry_the_seeds() -> None:
    table = ROUNDS["v4.0"]
    seeds = RoundSeeds.of(table.seeds, table.test05_seeds)
    settings = to_test_settings(LoadgenSettings("resnet50", Scenario.OFFLINE, seeds=seeds))
    assert settings.qsl_rng_seed == table.seeds["qsl_rng_seed"]
    assert settings.test05 is True
    assert settings.test05_schedule_rng_seed == table.test05_seeds["schedule_rng_seed"]  # type: ignore[index]


# min_query_count 1: the duration and rate size the query, not harness_overhead's config's count
# (10 million samples, seconds of CPU a run)
SHORT = [
    "--scenario",
    "Offline",
    "--min_duration_ms",
    "100",
    "--offline_expected_qps",
    "20000",
    "--min_query_count",
    "1",
]


def _run(log_dir: Path, *extra: str) -> dict[str, object]:
    assert run_benchmark_cli(BENCHMARK, [*SHORT, "--log_dir", str(log_dir), *extra]) == 0
    record: dict[str, object] = json.loads((log_dir / "result.json").read_text())
    return record


def test_a_run_for_an_earlier_round_uses_and_records_its_seeds(tmp_path: Path) -> None:
    record = _run(tmp_path / "v5.0", "--round", "v5.0")
    assert record["round"] == "v5.0"
    entries = read_detail_log(tmp_path / "v5.0" / "mlperf_log_detail.txt").entries
    for name in SEED_NAMES:
        assert entries[f"effective_{name}"] == ROUNDS["v5.0"].seeds[name]
    assert "qsl_rng_seed = 6023615788873153749" in (tmp_path / "v5.0" / "user.conf").read_text()
    # A v6.1 run is as it was: LoadGen's own seeds, none written into its user.conf.
    record = _run(tmp_path / "v6.1")
    assert record["round"] == "v6.1"
    entries = read_detail_log(tmp_path / "v6.1" / "mlperf_log_detail.txt").entries
    assert entries["effective_qsl_rng_seed"] == ROUNDS["v6.1"].seeds["qsl_rng_seed"]
    assert "seed" not in (tmp_path / "v6.1" / "user.conf").read_text()


def test_an_audit_the_round_lacks_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # harness_overhead is no submission model: its audits are its own, TEST05 is none of them.
    code = run_benchmark_cli(
        BENCHMARK, [*SHORT, "--log_dir", str(tmp_path), "--round", "v4.0", "--audit_test", "TEST05"]
    )
    assert code == 2
    assert "no TEST05 audit" in capsys.readouterr().err


# --- the preflight check and MLCommons' checker, by round ----------------------------------------


def _tree_before_v6(tmp_path: Path) -> Path:
    """A v5.0-layout tree with one Offline result (files just present: a layout check)."""
    root = tmp_path / "tree" / "closed" / "acme"
    result = root / "results" / "box" / "resnet50" / "Offline"
    for relative in (
        "performance/run_1/mlperf_log_summary.txt",
        "performance/run_1/mlperf_log_detail.txt",
        "accuracy/mlperf_log_summary.txt",
        "accuracy/mlperf_log_detail.txt",
        "accuracy/mlperf_log_accuracy.json",
        "accuracy/accuracy.txt",
    ):
        (result / relative).parent.mkdir(parents=True, exist_ok=True)
        (result / relative).write_text("x\n")
    measurements = root / "measurements" / "box" / "resnet50" / "Offline"
    measurements.mkdir(parents=True)
    for name in ("box_mlperf_harness_Offline.json", "user.conf", "README.md"):
        (measurements / name).write_text("{}\n")
    compliance = root / "compliance" / "box" / "resnet50" / "Offline"
    for test in ("TEST01", "TEST04"):
        (compliance / test / "performance" / "run_1").mkdir(parents=True)
        (compliance / test / "verify_performance.txt").write_text("TEST PASS\n")
    (root / "code").mkdir()
    (root / "code" / "README.md").write_text("x\n")
    (root / "systems").mkdir()
    (root / "systems" / "box.json").write_text(json.dumps({"system_type": "edge"}))
    return tmp_path / "tree"


def test_the_layout_is_checked_by_the_round(tmp_path: Path) -> None:
    tree = _tree_before_v6(tmp_path)
    layout = [p for p in check_tree(tree, round_name="v5.0") if p.kind is Kind.LAYOUT]
    # Only the files this bare tree leaves out: no directory of the round's layout is missing.
    assert not [p for p in layout if "missing directory" in p.message or "layout" in p.message]
    assert not [p for p in layout if "measurements.json" in p.path.as_posix()]
    as_v61 = check_tree(tree)
    assert any(
        "the layout before v6.0, not v6.1's" in p.message and p.path.name == "code" for p in as_v61
    )
    assert any(p.path.as_posix().endswith("Offline/measurements.json") for p in as_v61)
    # v4.0 asks for TEST05 and mlperf.conf besides.
    as_v40 = [p.line() for p in check_tree(tree, round_name="v4.0")]
    assert any("TEST05: missing: v4.0 asks for the TEST05 audit" in line for line in as_v40)
    assert any("Offline/mlperf.conf: missing" in line for line in as_v40)


FAKE_CHECKER = """\
import sys
print("[2026-01-01 00:00:00 main.py:1 INFO] args " + " ".join(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("round_name", "script"),
    [
        ("v5.1", "tools/submission/submission_checker/main.py"),
        ("v4.0", "tools/submission/submission_checker.py"),
    ],
)
def test_the_rounds_checker_runs_with_its_version(
    round_name: str, script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree_before_v6(tmp_path)
    source = tmp_path / "inference"
    (source / script).parent.mkdir(parents=True)
    (source / script).write_text(FAKE_CHECKER)
    monkeypatch.setattr(preflight_mlcommons, "CHECKER_MODULES", ("json",))
    check_main([str(tree), "--round", round_name, "--inference_src", str(source)])
    log = (tree / "closed" / "acme" / CHECKER_LOG).read_text()
    assert f"--version {round_name} --submitter acme" in log


def test_a_checkout_without_the_rounds_checker_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _tree_before_v6(tmp_path)
    source = tmp_path / "inference"
    (source / "tools" / "submission" / "submission_checker").mkdir(parents=True)
    (source / "tools" / "submission" / "submission_checker" / "main.py").write_text(FAKE_CHECKER)
    assert check_main([str(tree), "--round", "v4.0", "--inference_src", str(source)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "tools/submission/submission_checker.py --version v4.0 (at v4.0 of" in err
    shutil.rmtree(source)
