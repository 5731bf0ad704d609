"""Audit verification on real LoadGen runs of the null backend (harness_overhead): each check's pass
and fail paths, the TEST0x/ directory the checker wants, and the response comparison's counting as
MLCommons' verify_accuracy.py counts."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import read_detail_log
from mlperf_harness.submission.rounds import ROUNDS
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.verify import (
    AuditVerdict,
    compare_accuracy_logs,
    verify_audit,
)

# Server at a fixed rate: its metric (completed samples/s) is LoadGen's schedule, not the machine's
# speed, so the comparisons are stable on a busy machine. A lenient latency bound keeps it VALID.
SERVER = ["--scenario", "Server", "--server_target_qps", "2000", "--min_duration_ms", "600"]
SERVER += ["--min_query_count", "1"]  # by time: harness_overhead's configs size runs by count
RUNS: dict[str, list[str]] = {
    "perf": [],
    "perf_fast": ["--server_target_qps", "5000"],
    "acc": ["--test_mode", "AccuracyOnly"],
    "t01": ["--audit_test", "TEST01"],
    "t04": ["--audit_test", "TEST04"],
    "t04_fast": ["--audit_test", "TEST04", "--server_target_qps", "5000"],
    # Under other seeds (v5.0's): what a TEST05 run is, against seeds given as TEST05's.
    "t05": ["--round", "v5.0"],
    "t05_fast": ["--round", "v5.0", "--server_target_qps", "5000"],
    # Too short for early stopping: INVALID.
    "t01_invalid": ["--audit_test", "TEST01", "--min_duration_ms", "30"],
    "perf_invalid": ["--min_duration_ms", "30"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    user_conf = base / "user.conf"
    user_conf.write_text("harness_overhead.Server.target_latency = 1000\n")
    made = {}
    for name, extra in RUNS.items():
        log_dir = base / name
        argv = [*SERVER, "--user_conf", str(user_conf), "--log_dir", str(log_dir), *extra]
        assert run_benchmark_cli(BENCHMARK, argv) == 0
        made[name] = log_dir
    # LoadGen's own verdict (result.json's also counts LoadGen errors: a run after the first with
    # a user.conf logs "Multiple conf files are used").
    for name in ("perf", "perf_fast", "t01", "t04", "t04_fast", "t05", "t05_fast"):
        entries = read_detail_log(made[name] / "mlperf_log_detail.txt").entries
        assert entries["result_validity"] == "VALID", (name, entries.get("result_invalid_reason"))
    for name in ("t01_invalid", "perf_invalid"):
        entries = read_detail_log(made[name] / "mlperf_log_detail.txt").entries
        assert entries["result_validity"] == "INVALID", name
    return made


def _verify(
    runs: dict[str, Path],
    test: AuditTest,
    audit: str,
    out_dir: Path,
    *,
    reference: str = "perf",
    accuracy: str = "acc",
    dtype: str = "uint8",
    score: Callable[[Path], float] | None = None,
    delta: float = 1.0,
) -> AuditVerdict:
    return verify_audit(
        test,
        audit_run=runs[audit],
        reference_run=runs[reference],
        accuracy_run=runs[accuracy],
        out_dir=out_dir,
        dtype=dtype,
        score=score,
        accuracy_fraction_delta=delta,
    )


def _files(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()}


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines()]


# --- the pass paths and the directory --------------------------------------------------------------


def test_test01_passes_and_writes_the_directory_the_checker_wants(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "TEST01"
    verdict = _verify(runs, AuditTest.TEST01, "t01", out)
    assert verdict == AuditVerdict(AuditTest.TEST01, True, [], [])
    assert _files(out) == {
        "verify_accuracy.txt",
        "verify_performance.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "performance/run_1/mlperf_log_detail.txt",
        "accuracy/mlperf_log_accuracy.json",
        "accuracy/accuracy.txt",
    }
    assert "TEST PASS" in _lines(out / "verify_accuracy.txt")  # the checker wants this exact line
    performance = _lines(out / "verify_performance.txt")
    assert performance[0] == "Verifying performance."
    assert performance[-1] == "TEST PASS"
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt"):
        assert (out / "performance/run_1" / name).read_bytes() == (runs["t01"] / name).read_bytes()
    audit_log = (runs["t01"] / "mlperf_log_accuracy.json").read_bytes()
    assert (out / "accuracy/mlperf_log_accuracy.json").read_bytes() == audit_log
    assert (out / "accuracy/accuracy.txt").read_text() == ""  # no metric given: nothing to say


def test_verify_accuracy_txt_is_mlcommons_output(runs: dict[str, Path], tmp_path: Path) -> None:
    _verify(runs, AuditTest.TEST01, "t01", tmp_path / "TEST01")
    logged = len(json.loads((runs["t01"] / "mlperf_log_accuracy.json").read_text()))
    assert (tmp_path / "TEST01/verify_accuracy.txt").read_text() == (
        "Verifying accuracy. This might take a while...\n"
        "Reading accuracy mode results...\n"
        "Reading performance mode results...\n"
        "num_acc_log_entries = 1024\n"
        "num_acc_log_duplicate_keys = 0\n"
        "num_acc_log_data_mismatch = 0\n"
        f"num_perf_log_entries = {logged}\n"
        f"num_perf_log_qsl_idx_match = {logged}\n"
        "num_perf_log_data_mismatch = 0\n"
        "num_missing_qsl_idxs = 0\n"
        "TEST PASS\n"
        "\n"
    )


def test_test04_passes_with_only_performance_files(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "TEST04"
    verdict = _verify(runs, AuditTest.TEST04, "t04", out, accuracy="acc")
    assert verdict.passed, verdict.reasons
    assert _files(out) == {
        "verify_performance.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "performance/run_1/mlperf_log_detail.txt",
    }
    lines = _lines(out / "verify_performance.txt")
    assert lines[0] == "Verifying performance."
    assert lines[-3].startswith("reference score = ")
    assert lines[-1] == "TEST PASS"


def _with_detail(run: Path, copy: Path, **values: object) -> Path:
    """A copy of a run whose detail log says `values` for those keys (the cases a short run on
    this machine cannot make)."""
    shutil.copytree(run, copy)
    detail = copy / "mlperf_log_detail.txt"
    lines, left = [], dict(values)
    for line in detail.read_text().splitlines():
        if line.startswith(":::MLLOG "):
            record = json.loads(line[len(":::MLLOG ") :])
            if record["key"] in values:
                record["value"] = left.pop(record["key"], values[record["key"]])
                line = ":::MLLOG " + json.dumps(record)
        lines.append(line)
    metadata = {"is_error": False, "is_warning": False}
    lines += [
        ":::MLLOG " + json.dumps({"key": k, "value": v, "metadata": metadata})
        for k, v in left.items()
    ]
    detail.write_text("\n".join(lines) + "\n")
    return copy


def test_runs_with_loadgen_errors_warn_and_still_pass(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    # Audit runs often log "Multiple conf files are used" as an error, which the checker accepts
    # in audits: MLCommons' scripts warn, and so do we.
    erring = {**runs}
    for name in ("t01", "t04"):
        erring[name] = _with_detail(runs[name], tmp_path / name, num_errors=2)
    assert _verify(erring, AuditTest.TEST04, "t04", tmp_path / "TEST04").passed
    lines = _lines(tmp_path / "TEST04/verify_performance.txt")
    assert "WARNING: 2 ERROR reported in test results" in lines
    assert _verify(erring, AuditTest.TEST01, "t01", tmp_path / "TEST01").passed
    lines = _lines(tmp_path / "TEST01/verify_performance.txt")
    assert f"WARNING: 2 ERROR reported in {erring['t01'] / 'mlperf_log_detail.txt'}" in lines


@pytest.mark.parametrize(
    ("reference_ns", "audit_ns", "passed"),
    [
        (150_000, 170_000, True),  # SingleStream at most 0.2 ms: 20% either way
        (150_000, 125_000, True),
        (150_000, 185_000, False),
        (1_000_000, 1_130_000, False),  # longer: 10%
        (1_000_000, 1_080_000, True),
    ],
)
def test_test01_allows_short_single_stream_latencies_more(
    runs: dict[str, Path], tmp_path: Path, reference_ns: int, audit_ns: int, passed: bool
) -> None:
    made = {**runs}
    for name, latency in (("perf", reference_ns), ("t01", audit_ns)):
        made[name] = _with_detail(
            runs[name],
            tmp_path / name,
            effective_scenario="SingleStream",
            early_stopping_latency_ss=latency,
        )
    verdict = _verify(made, AuditTest.TEST01, "t01", tmp_path / "TEST01")
    assert verdict.passed is passed, verdict.reasons
    lines = _lines(tmp_path / "TEST01/verify_performance.txt")
    assert lines[-3:-1] == [f"Reference score = {reference_ns:.1f}", f"Test score = {audit_ns:.1f}"]


# --- the performance fail paths ------------------------------------------------------------------


def test_test04_audit_much_faster_than_the_reference_fails(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "TEST04"
    verdict = _verify(runs, AuditTest.TEST04, "t04_fast", out)
    assert not verdict.passed
    assert "TEST FAIL: Test score invalid" in _lines(out / "verify_performance.txt")
    assert "TEST PASS" not in (out / "verify_performance.txt").read_text()
    assert "faster than the reference run (at most 10%)" in verdict.reasons[0]


def test_test04_audit_slower_than_the_reference_passes(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    verdict = _verify(runs, AuditTest.TEST04, "t04", tmp_path / "TEST04", reference="perf_fast")
    assert verdict.passed, verdict.reasons


def test_test01_performance_outside_ten_percent_fails(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    # TEST01 holds both ways: an audit run much slower than the reference fails too.
    out = tmp_path / "TEST01"
    verdict = _verify(runs, AuditTest.TEST01, "t01", out, reference="perf_fast")
    assert not verdict.passed
    assert _lines(out / "verify_performance.txt")[-1] == "TEST FAIL: Test score invalid"
    assert "TEST PASS" in _lines(out / "verify_accuracy.txt")  # the responses still agree
    (reason,) = verdict.reasons
    assert reason.startswith("TEST01 performance: the audit run's")
    assert "not within 10% of the reference run's" in reason


def test_an_invalid_audit_run_fails_test01_saying_why(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "TEST01"
    verdict = _verify(runs, AuditTest.TEST01, "t01_invalid", out)
    assert not verdict.passed
    detail = runs["t01_invalid"] / "mlperf_log_detail.txt"
    assert f"TEST FAIL: Invalid results in {detail}" in _lines(out / "verify_performance.txt")
    (reason,) = verdict.reasons
    assert reason.startswith(
        f"TEST01 performance: the audit run {runs['t01_invalid']} is INVALID: "
    )
    assert "not satisfied" in reason  # LoadGen's own words for why


def test_an_invalid_reference_run_fails_test04(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "TEST04"
    verdict = _verify(runs, AuditTest.TEST04, "t04", out, reference="perf_invalid")
    assert not verdict.passed
    assert _lines(out / "verify_performance.txt") == [
        "Verifying performance.",
        "TEST FAIL: Reference results are invalid",
    ]
    assert "the reference performance run" in verdict.reasons[0]
    assert "INVALID" in verdict.reasons[0]


# --- TEST01 responses and Part III ---------------------------------------------------------------


def _label(qsl_idx: int) -> int:
    return qsl_idx % 1000


def _int32_hex(*values: int) -> str:
    return struct.pack(f"<{len(values)}i", *values).hex().upper()


def _write_log(path: Path, entries: Iterable[tuple[int, str]]) -> None:
    """A LoadGen-style accuracy log."""
    body = ",\n".join(
        f'{{ "seq_id" : {n}, "qsl_idx" : {q}, "data" : "{d}" }}' for n, (q, d) in enumerate(entries)
    )
    path.write_text(f"[\n{body}\n]\n")


def _top1(log: Path) -> float:
    """A stand-in metric: percent of samples (each counted once) whose first int32 is its label."""
    seen: dict[int, bool] = {}
    for entry in json.loads(log.read_text()):
        value = struct.unpack("<i", bytes.fromhex(entry["data"])[:4])[0]
        seen.setdefault(entry["qsl_idx"], value == _label(entry["qsl_idx"]))
    return 100.0 * sum(seen.values()) / len(seen)


@pytest.fixture()
def int32_runs(runs: dict[str, Path], tmp_path: Path) -> Callable[..., dict[str, Path]]:
    """Copies of the accuracy and TEST01 runs whose responses are int32 labels, as
    `audit_value(qsl_idx)` and `accuracy_value(qsl_idx)` say (the label: right)."""

    def make(
        audit_value: Callable[[int], int], accuracy_value: Callable[[int], int] = _label
    ) -> dict[str, Path]:
        made = dict(runs)
        for name in ("acc", "t01"):
            made[name] = tmp_path / f"{name}_int32"
            shutil.copytree(runs[name], made[name])
        acc_log = made["acc"] / "mlperf_log_accuracy.json"
        audit_log = made["t01"] / "mlperf_log_accuracy.json"
        acc_ids = [e["qsl_idx"] for e in json.loads(acc_log.read_text())]
        audit_ids = [e["qsl_idx"] for e in json.loads(audit_log.read_text())]
        _write_log(acc_log, [(q, _int32_hex(accuracy_value(q), 7)) for q in acc_ids])
        _write_log(audit_log, [(q, _int32_hex(audit_value(q), 7)) for q in audit_ids])
        return made

    return make


def test_int32_responses_that_agree_pass(
    int32_runs: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    made = int32_runs(lambda q: _label(q))
    out = tmp_path / "TEST01"
    verdict = _verify(made, AuditTest.TEST01, "t01", out, dtype="int32", score=_top1)
    assert verdict.passed, verdict.reasons
    assert (out / "accuracy/accuracy.txt").read_text() == "accuracy=100.000%\n"
    assert not (out / "accuracy/baseline_accuracy.txt").exists()  # Part III was not needed


def test_responses_that_differ_fail_without_a_metric(
    int32_runs: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    # Samples whose response changed between the runs, and no metric to judge them by.
    made = int32_runs(lambda q: _label(q) + (q % 50 == 0))
    out = tmp_path / "TEST01"
    verdict = _verify(made, AuditTest.TEST01, "t01", out, dtype="int32", score=None)
    assert not verdict.passed
    lines = _lines(out / "verify_accuracy.txt")
    assert "TEST FAIL" in lines and "TEST PASS" not in lines
    assert any(
        line.startswith("num_perf_log_data_mismatch = ") and not line.endswith(" 0")
        for line in lines
    )
    (reason,) = verdict.reasons
    assert "differ from it (compared as int32), and there is no metric for Part III" in reason


def test_responses_that_differ_pass_by_part_iii_when_the_metric_holds(
    runs: dict[str, Path], int32_runs: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    # One sample answered wrong in both runs, differently: the responses differ, the metric not.
    first = json.loads((runs["t01"] / "mlperf_log_accuracy.json").read_text())[0]["qsl_idx"]
    made = int32_runs(
        lambda q: _label(q) + 2000 * (q == first),
        accuracy_value=lambda q: _label(q) + 1000 * (q == first),
    )
    out = tmp_path / "TEST01"
    verdict = _verify(made, AuditTest.TEST01, "t01", out, dtype="int32", score=_top1)
    assert verdict.passed, verdict.reasons
    assert "TEST PASS" not in _lines(out / "verify_accuracy.txt")  # as MLCommons' script says
    assert "passed by Part III" in verdict.notes[0]
    # The checker's file list for TEST01/accuracy when the deterministic check fails.
    assert _files(out / "accuracy") == {
        "mlperf_log_accuracy.json",
        "accuracy.txt",
        "baseline_accuracy.txt",
        "compliance_accuracy.txt",
    }
    baseline = (out / "accuracy/baseline_accuracy.txt").read_text()
    compliance = (out / "accuracy/compliance_accuracy.txt").read_text()
    assert baseline == compliance  # the same score over the same samples
    assert baseline.startswith("accuracy=") and baseline.endswith("%\n")


def test_responses_that_differ_fail_part_iii_when_the_metric_drops(
    int32_runs: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    made = int32_runs(lambda q: _label(q) + (q % 10 == 0))  # a tenth of the samples wrong
    out = tmp_path / "TEST01"
    verdict = _verify(made, AuditTest.TEST01, "t01", out, dtype="int32", score=_top1)
    assert not verdict.passed
    (reason,) = verdict.reasons
    assert "Part III:" in reason and "(at most 1%)" in reason
    assert (out / "accuracy/baseline_accuracy.txt").read_text() == "accuracy=100.000%\n"
    compliance = float((out / "accuracy/compliance_accuracy.txt").read_text()[9:-2])
    assert 85 < compliance < 95


def test_part_iii_allows_less_for_99_9_models(
    int32_runs: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    # About 0.5% of the samples wrong: within 1% of the accuracy run, not within 0.1%.
    made = int32_runs(lambda q: _label(q) + (q % 200 == 0))
    looser = _verify(made, AuditTest.TEST01, "t01", tmp_path / "a", dtype="int32", score=_top1)
    stricter = _verify(
        made, AuditTest.TEST01, "t01", tmp_path / "b", dtype="int32", score=_top1, delta=0.1
    )
    assert looser.passed, looser.reasons
    assert not stricter.passed and "(at most 0.1%)" in stricter.reasons[0]


# --- the response comparison, as MLCommons counts ----------------------------------------------


def _counts(
    tmp_path: Path, accuracy: list[tuple[int, str]], audit: list[tuple[int, str]], dtype: str
) -> dict[str, int]:
    _write_log(tmp_path / "acc.json", accuracy)
    _write_log(tmp_path / "audit.json", audit)
    comparison = compare_accuracy_logs(tmp_path / "acc.json", tmp_path / "audit.json", dtype)
    counts = dict(vars(comparison))
    counts["passed"] = comparison.passed
    return counts


def test_responses_compare_by_their_first_value_in_the_data_type(tmp_path: Path) -> None:
    accuracy = [(1, _int32_hex(7, 1)), (2, _int32_hex(8, 1))]
    # Only the first int32 counts (as MLCommons compares): the second value may differ.
    same_first = _counts(
        tmp_path, accuracy, [(1, _int32_hex(7, 99)), (2, _int32_hex(8, 2))], "int32"
    )
    assert same_first["passed"] and same_first["num_perf_log_qsl_idx_match"] == 2
    differ = _counts(tmp_path, accuracy, [(1, _int32_hex(7, 1)), (2, _int32_hex(9, 1))], "int32")
    assert not differ["passed"] and differ["num_perf_log_data_mismatch"] == 1
    # As bytes, 8 and 8 + 256 share their first byte; as int32 they differ.
    wide = [(2, _int32_hex(8 + 256, 1))]
    assert _counts(tmp_path, accuracy, wide, "byte")["passed"]
    assert not _counts(tmp_path, accuracy, wide, "int32")["passed"]


def test_response_comparison_counts_duplicates_missing_and_empty(tmp_path: Path) -> None:
    accuracy = [(1, ""), (2, _int32_hex(2)), (2, _int32_hex(3)), (3, _int32_hex(3))]
    audit = [(1, ""), (4, _int32_hex(4)), (4, _int32_hex(4)), (3, "")]
    assert _counts(tmp_path, accuracy, audit, "int32") == {
        "num_acc_log_entries": 4,
        "num_acc_log_duplicate_keys": 1,
        "num_acc_log_data_mismatch": 1,
        "num_perf_log_entries": 4,
        # 1 (empty = empty); 4 the second time (against the audit's own first 4); 3 (empty != 3)
        "num_perf_log_qsl_idx_match": 3,
        "num_perf_log_data_mismatch": 1,
        "num_missing_qsl_idxs": 1,
        "passed": False,
    }
    nothing_shared = _counts(tmp_path, accuracy, [(9, _int32_hex(9))], "int32")
    assert not nothing_shared["passed"] and nothing_shared["num_missing_qsl_idxs"] == 1


def test_response_comparison_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="not a whole number of int32 values"):
        _counts(tmp_path, [(1, "0102")], [(1, "010203")], "int32")
    with pytest.raises(HarnessError, match="unknown response data type"):
        _counts(tmp_path, [(1, "")], [(1, "")], "text")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(HarnessError, match="cannot read LoadGen accuracy log"):
        compare_accuracy_logs(tmp_path / "bad.json", tmp_path / "bad.json", "int32")


# --- replacing, and refusing inputs ----------------------------------------------------------------


def test_a_rerun_replaces_the_directory_and_leaves_no_partial(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "TEST04"
    _verify(runs, AuditTest.TEST04, "t04_fast", out)
    (out / "stray.txt").write_text("from before")
    (tmp_path / ".TEST04.abc.partial").mkdir()  # an interrupted run's
    verdict = _verify(runs, AuditTest.TEST04, "t04", out)
    assert verdict.passed
    assert not (out / "stray.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TEST04"]


def test_a_failure_while_verifying_leaves_the_previous_directory(
    int32_runs: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    made = int32_runs(lambda q: _label(q))
    out = tmp_path / "TEST01"
    _verify(made, AuditTest.TEST01, "t01", out, dtype="int32", score=_top1)
    before = {name: (out / name).read_bytes() for name in _files(out)}

    def broken(log: Path) -> float:
        raise HarnessError("the scorer broke")

    with pytest.raises(HarnessError, match="the scorer broke"):
        _verify(made, AuditTest.TEST01, "t01", out, dtype="int32", score=broken)
    assert {name: (out / name).read_bytes() for name in _files(out)} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize(
    ("test", "audit", "reference", "accuracy", "message"),
    [
        (AuditTest.TEST01, "t04", "perf", "acc", "is not a TEST01 audit run"),
        (AuditTest.TEST04, "t01", "perf", "acc", "is not a TEST04 audit run"),
        (AuditTest.TEST04, "t04", "t04", "acc", "is not a normal performance run"),
        (AuditTest.TEST01, "t01", "perf", "perf", "is not an accuracy run"),
        (AuditTest.TEST01, "t01", "perf", None, "give one"),
        (AuditTest.TEST01, "t01", "missing", "acc", "is not a directory"),
        (AuditTest.TEST06, "t01", "perf", "acc", "only TEST01, TEST04 and TEST05"),
    ],
)
def test_wrong_inputs_are_one_line_errors(
    runs: dict[str, Path],
    tmp_path: Path,
    test: AuditTest,
    audit: str,
    reference: str,
    accuracy: str | None,
    message: str,
) -> None:
    paths = {**runs, "missing": tmp_path / "missing"}
    with pytest.raises(HarnessError, match=message) as raised:
        verify_audit(
            test,
            audit_run=paths[audit],
            reference_run=paths[reference],
            accuracy_run=None if accuracy is None else paths[accuracy],
            out_dir=tmp_path / "out",
            dtype="uint8",
            score=None,
            accuracy_fraction_delta=1.0,
        )
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out").exists()


# --- TEST05 (v4.0) -------------------------------------------------------------------------------

_OTHER_SEEDS = ROUNDS["v5.0"].seeds  # the seeds the "t05" run was made under


def _verify_test05(
    runs: dict[str, Path], out_dir: Path, *, reference: str = "perf", audit: str = "t05"
) -> AuditVerdict:
    return verify_audit(
        AuditTest.TEST05,
        audit_run=runs[audit],
        reference_run=runs[reference],
        accuracy_run=None,
        out_dir=out_dir,
        dtype="uint8",
        score=None,
        accuracy_fraction_delta=1.0,
        test05_seeds=_OTHER_SEEDS,
    )


def test_test05_passes_within_five_percent_with_performance_files_only(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "TEST05"
    verdict = _verify_test05(runs, out, audit="t05_fast")  # faster: passes whatever the noise
    assert verdict.passed, verdict.reasons
    assert _files(out) == {
        "verify_performance.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "performance/run_1/mlperf_log_detail.txt",
    }
    assert _lines(out / "verify_performance.txt")[-1] == "TEST PASS"


def test_test05_slower_than_the_reference_fails(runs: dict[str, Path], tmp_path: Path) -> None:
    verdict = _verify_test05(runs, tmp_path / "TEST05", reference="perf_fast")
    assert not verdict.passed
    assert "more than 5% worse than the reference run's" in verdict.reasons[0]
    assert "TEST FAIL: Test score invalid" in _lines(tmp_path / "TEST05" / "verify_performance.txt")


def test_test05_wants_a_run_under_its_seeds(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="is not a TEST05 audit run"):
        _verify_test05(runs, tmp_path / "TEST05", audit="perf_fast")
    with pytest.raises(HarnessError, match="TEST05 is verified against the round's TEST05 seeds"):
        verify_audit(
            AuditTest.TEST05,
            audit_run=runs["t05"],
            reference_run=runs["perf"],
            accuracy_run=None,
            out_dir=tmp_path / "TEST05",
            dtype="uint8",
            score=None,
            accuracy_fraction_delta=1.0,
        )
