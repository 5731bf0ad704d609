"""Compliance audit verification (TEST01, TEST04): our own implementation of what MLCommons'
`compliance/TEST0x/run_verification.py` checks, writing the same lines into verify_accuracy.txt
and verify_performance.txt (the submission checker looks for `TEST PASS`), and the TEST0x/
directory laid out as the checker wants it.

- TEST01 accuracy: every response the audit run logged (LoadGen samples them in audit mode) must
  equal that sample's response in the accuracy run. As MLCommons' verify_accuracy.py compares them:
  the first value of each response read as the benchmark's data type (ResNet-50's response is one
  int32 label), an empty response equal only to an empty one, a sample the accuracy run did not
  log not counted. Where they differ, Part III: the benchmark's metric over the audit run's log
  and over the accuracy run's responses for the same samples (MLCommons' "baseline") may differ by
  at most 1% of each other (0.1% for 99.9% models), computed as the checker does:
  |1 - baseline / compliance| * 100.
- TEST01 performance (from the detail logs): the audit run's metric within 10% of the reference
  performance run's either way, 20% for SingleStream at most 0.2 ms or MultiStream at most 1.6 ms.
- TEST04 performance (MLCommons reads the summaries; we read the same values from the detail
  logs): the audit run's rate (latencies as 1e9 / latency) less than 110% of the reference's.
  MLCommons' script widens this to 120% for SingleStream and MultiStream when the *rate* is at
  most 200,000 (1,600,000): in effect always; we apply the same rule so that verdicts agree.
- TEST05 performance (v4.0's compliance/nvidia/TEST05/verify_performance.py; the same values from
  the detail logs): the audit run, made under the round's TEST05 seeds, no more than 5% slower
  than the reference (a rate above 95% of it, a latency below 105%), 20% for SingleStream at most
  0.2 ms or MultiStream at most 1.6 ms.
- An INVALID run in either comparison fails it (MLCommons' words in the file, LoadGen's reasons in
  the verdict).

Two deliberate differences: MLCommons' TEST01 performance script crashes (a NameError) on a log
with LoadGen errors, which every audit run has where a user.conf is used ("Multiple conf files are
used"); we print the warning it means to print and go on, as its TEST04 script does. And its
TEST04 pattern for the Server target latency never matches the summary's line, so TEST04 compares
no target latencies; neither do we.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import LoggedResponse, read_accuracy_log
from mlperf_harness.loadgen.results import (
    ACCURACY_FILE,
    DETAIL_FILE,
    SUMMARY_FILE,
    read_detail_log,
    read_summary_reasons,
)
from mlperf_harness.run_files import ACCURACY_TXT
from mlperf_harness.submission.audit_dirs import TEST_PASS, VERIFY_ACCURACY, VERIFY_PERFORMANCE
from mlperf_harness.submission.rules import (
    METRIC_KEYS,
    TEST01_ACCURACY_LOG_RNG_SEED,
    AuditTest,
)

BASELINE_ACCURACY = "baseline_accuracy.txt"  # Part III: the accuracy run's metric, same samples
COMPLIANCE_ACCURACY = "compliance_accuracy.txt"  # Part III: the audit run's metric
_PARTIAL = ".partial"  # out_dir is built as .<name>.<random>.partial beside it, then renamed

# Each scenario's metric in the detail log, as MLCommons' TEST01 script reads it. SingleStream's
# and MultiStream's are latencies (ns), the others rates.
_METRIC_KEYS = {scenario.value: key for scenario, key in METRIC_KEYS.items()}
_LATENCY_SCENARIOS = ("SingleStream", "MultiStream")
_TOLERANCE = 0.10
# LoadGen's allowance for very short latencies, where run-to-run noise from the OS dominates.
_SHORT_TOLERANCE = 0.20
_SHORT_LATENCY_NS = {"SingleStream": 200_000, "MultiStream": 1_600_000}


@dataclass(frozen=True)
class AuditVerdict:
    test: AuditTest
    passed: bool
    reasons: list[str] = field(default_factory=list)  # why it failed, one line each
    notes: list[str] = field(default_factory=list)  # how it passed, where that is worth saying


def percent_metric_line(value: float) -> str:
    """Part III's accuracy files for a metric in percent (ResNet-50's top-1), in the words of
    MLCommons' ImageNet accuracy script, which the checker's `acc` pattern reads."""
    return f"accuracy={value:.3f}%"


def verify_audit(
    test: AuditTest,
    *,
    audit_run: Path,
    reference_run: Path,
    accuracy_run: Path | None,
    out_dir: Path,
    dtype: str,
    score: Callable[[Path], float] | None,
    accuracy_fraction_delta: float,
    metric_line: Callable[[float], str] = percent_metric_line,
    test05_seeds: Mapping[str, int] | None = None,
) -> AuditVerdict:
    """Verify one audit run and write `out_dir` as the complete TEST0x/ directory of a submission:
    verify_performance.txt, performance/run_1/ (the audit run's summary and detail logs only), and
    for TEST01 verify_accuracy.txt and accuracy/ (the audit run's accuracy log, accuracy.txt, and
    where responses differ Part III's baseline_accuracy.txt and compliance_accuracy.txt).

    `reference_run`: the performance run the audit is compared with; `accuracy_run`: the accuracy
    run whose responses TEST01 compares (unused by TEST04). `dtype`: the numpy type of each logged
    response ("int32" for ResNet-50). `score(accuracy_log)`: the benchmark's metric over whichever
    samples a log holds, for Part III and TEST01's accuracy.txt (None: no metric, and no Part III).
    `accuracy_fraction_delta`: Part III's allowed difference in percent, as the checker's
    get_delta_perc (1.0 for 99% models, 0.1 for 99.9%). `metric_line`: how a score is written.
    `test05_seeds`: for TEST05, the round's TEST05 seeds, which the audit run must show.

    `out_dir` is built under a temporary name beside it and renamed into place; a run again
    replaces it. Inputs that are not what they should be raise a one-line HarnessError.
    """
    if test not in (AuditTest.TEST01, AuditTest.TEST04, AuditTest.TEST05):
        raise HarnessError(f"{test.value} has no verification here: only TEST01, TEST04 and TEST05")
    if test is AuditTest.TEST05 and not test05_seeds:
        raise HarnessError("TEST05 is verified against the round's TEST05 seeds: give them")
    if not accuracy_fraction_delta > 0:
        raise HarnessError(
            f"accuracy_fraction_delta must be a positive percent, not {accuracy_fraction_delta}"
        )
    audit = _load_run(audit_run, "audit")
    reference = _load_run(reference_run, "reference performance")
    _expect_audit(audit, test, test05_seeds)
    _expect_reference(reference, test05_seeds)
    accuracy: _Run | None = None
    response_type = np.dtype(np.uint8)
    if test is AuditTest.TEST01:
        if accuracy_run is None:
            raise HarnessError(
                "TEST01 compares the audit run's responses with an accuracy run's: give one"
            )
        accuracy = _load_run(accuracy_run, "accuracy")
        _expect_accuracy(accuracy)
        for run in (audit, accuracy):
            if not (run.path / ACCURACY_FILE).is_file():
                raise HarnessError(f"{run.role} run {run.path} has no {ACCURACY_FILE}")
        response_type = _response_dtype(dtype)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for leftover in out_dir.parent.glob(f".{out_dir.name}.*{_PARTIAL}"):  # an interrupted run's
        shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(
        tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=_PARTIAL, dir=out_dir.parent)
    )
    try:
        content = staging / out_dir.name
        run_1 = content / "performance" / "run_1"
        run_1.mkdir(parents=True)
        for name in (SUMMARY_FILE, DETAIL_FILE):
            shutil.copy2(audit.path / name, run_1 / name)
        if test is AuditTest.TEST01:
            performance = _test01_performance(reference, audit)
        elif test is AuditTest.TEST04:
            performance = _test04_performance(reference, audit)
        else:
            performance = _test05_performance(reference, audit)
        _write_lines(content / VERIFY_PERFORMANCE, performance.lines)
        checks = [performance]
        if accuracy is not None:
            checks.append(
                _test01_accuracy(
                    accuracy,
                    audit,
                    content,
                    staging,
                    response_type,
                    score,
                    accuracy_fraction_delta,
                    metric_line,
                )
            )
        _replace_dir(content, out_dir, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    reasons = [f"{test.value} {reason}" for check in checks for reason in check.reasons]
    notes = [f"{test.value} {note}" for check in checks for note in check.notes]
    return AuditVerdict(test, all(check.passed for check in checks), reasons, notes)


# --- the runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
    path: Path
    role: str
    entries: dict[str, Any]  # the detail log's keys
    error_count: int  # LoadGen's own count where it logged one, else the error lines

    @property
    def detail(self) -> Path:
        return self.path / DETAIL_FILE

    @property
    def scenario(self) -> str:
        return str(self.entries.get("effective_scenario", ""))

    @property
    def valid(self) -> bool:
        return self.entries.get("result_validity") == "VALID"

    def invalid_reasons(self) -> str:
        reasons = read_summary_reasons(self.path / SUMMARY_FILE)
        return (
            "; ".join(reasons) or str(self.entries.get("result_invalid_reason", "")).strip() or "?"
        )


def _load_run(path: Path, role: str) -> _Run:
    if not path.is_dir():
        raise HarnessError(f"{role} run {path} is not a directory")
    for name in (SUMMARY_FILE, DETAIL_FILE):
        if not (path / name).is_file():
            raise HarnessError(f"{role} run {path} has no {name}: not a finished LoadGen run")
    detail = read_detail_log(path / DETAIL_FILE)
    errors = detail.entries.get("num_errors")
    count = int(errors) if isinstance(errors, int) else len(detail.errors)
    return _Run(path, role, detail.entries, count)


_SEED_NAMES = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")


def _has_seeds(entries: Mapping[str, Any], seeds: Mapping[str, int] | None) -> bool:
    if not seeds:
        return False
    return all(entries.get(f"effective_{name}") == seeds[name] for name in _SEED_NAMES)


def _expect_audit(run: _Run, test: AuditTest, test05_seeds: Mapping[str, int] | None) -> None:
    """LoadGen logs the settings it applied: an audit run shows its audit.config's."""
    entries = run.entries
    if test is AuditTest.TEST01:
        applied = entries.get("effective_accuracy_log_rng_seed") == TEST01_ACCURACY_LOG_RNG_SEED
    elif test is AuditTest.TEST04:
        applied = entries.get("effective_performance_issue_same") is True
    else:
        applied = _has_seeds(entries, test05_seeds)
    if not applied or entries.get("effective_test_mode") != "PerformanceOnly":
        raise HarnessError(
            f"{run.path} is not a {test.value} audit run (LoadGen did not apply {test.value}'s"
            f" audit.config): run it with --audit_test {test.value}"
        )


def _expect_reference(run: _Run, test05_seeds: Mapping[str, int] | None) -> None:
    entries = run.entries
    audited = (
        entries.get("effective_performance_issue_same") is True
        or entries.get("effective_accuracy_log_rng_seed") == TEST01_ACCURACY_LOG_RNG_SEED
        or _has_seeds(entries, test05_seeds)
    )
    if entries.get("effective_test_mode") != "PerformanceOnly" or audited:
        mode = entries.get("effective_test_mode")
        raise HarnessError(
            f"{run.path} is not a normal performance run ({mode}{', audited' if audited else ''}):"
            " an audit is compared with the submission's performance run"
        )


def _expect_accuracy(run: _Run) -> None:
    mode = run.entries.get("effective_test_mode")
    if mode != "AccuracyOnly":
        raise HarnessError(
            f"{run.path} is not an accuracy run ({mode}): TEST01 needs AccuracyOnly's log"
        )


def _response_dtype(name: str) -> np.dtype[Any]:
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "biuf":  # MLCommons offers byte, int32, int64, float32
        raise HarnessError(
            f"unknown response data type {name!r}: use a numpy number type such as int32"
        )
    return dtype


# --- performance ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Check:
    passed: bool
    lines: list[str]  # the verify_*.txt file, in MLCommons' words
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _invalid(run: _Run, what: str) -> str:
    return f"performance: the {what} run {run.path} is INVALID: {run.invalid_reasons()}"


def _test01_performance(reference: _Run, audit: _Run) -> _Check:
    lines = ["Verifying performance."]
    scores: list[float] = []
    for run in (reference, audit):
        if not run.valid:
            lines.append(f"TEST FAIL: Invalid results in {run.detail}")
            return _Check(False, lines, [_invalid(run, run.role)])
        if run.error_count:
            lines.append(f"WARNING: {run.error_count} ERROR reported in {run.detail}")
        key = _METRIC_KEYS.get(run.scenario)
        if key is None or key not in run.entries:
            lines.append(f"TEST FAIL: no {key or 'metric'} in {run.detail}")
            return _Check(
                False, lines, [f"performance: {run.detail} logs no {run.scenario} metric"]
            )
        scores.append(float(run.entries[key]))
    ref_score, test_score = scores
    if audit.scenario != reference.scenario:
        lines.append("TEST FAIL: Test and reference scenarios do not match!")
        return _Check(False, lines, [_scenarios_differ(reference, audit)])
    if reference.scenario == "Server":
        target = "effective_target_latency_ns"
        if audit.entries.get(target) != reference.entries.get(target):
            lines.append("TEST FAIL: Server target latency mismatch")
            return _Check(
                False,
                lines,
                [
                    f"performance: the audit run's Server target latency"
                    f" ({audit.entries.get(target)} ns) is not the reference's"
                    f" ({reference.entries.get(target)} ns)"
                ],
            )
    lines += [f"Reference score = {ref_score}", f"Test score = {test_score}"]
    tolerance = _TOLERANCE
    if ref_score <= _SHORT_LATENCY_NS.get(reference.scenario, -1):
        tolerance = _SHORT_TOLERANCE
    if ref_score * (1 - tolerance) <= test_score <= ref_score * (1 + tolerance):
        return _Check(True, [*lines, TEST_PASS])
    lines.append("TEST FAIL: Test score invalid")
    unit = "ns" if reference.scenario in _LATENCY_SCENARIOS else "samples/s"
    return _Check(
        False,
        lines,
        [
            f"performance: the audit run's {test_score:g} {unit} is not within"
            f" {tolerance:.0%} of the reference run's {ref_score:g} {unit}"
        ],
    )


def _test04_rate(run: _Run) -> tuple[str, float]:
    """The score MLCommons' TEST04 script reads from the summary, as it prints and compares it:
    the rate for Offline and Server, 1e9 / the early-stopping latency estimate for the latency
    scenarios (0 where LoadGen logged none)."""
    key = _METRIC_KEYS.get(run.scenario)
    value = run.entries.get(key) if key is not None else None
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return "0", 0.0
    if run.scenario in _LATENCY_SCENARIOS:
        rate = 1e9 / float(value)
        return str(rate), rate
    # The summary's own rounding of the detail log's value: LoadGen prints Server's rate with two
    # decimals and Offline's as a C++ stream does (six significant digits, as %g).
    text = f"{float(value):.2f}" if run.scenario == "Server" else f"{float(value):g}"
    return text, float(text)


def _test04_performance(reference: _Run, audit: _Run) -> _Check:
    lines = ["Verifying performance."]
    for run, words in ((reference, "Reference"), (audit, "Test")):
        if not run.valid:
            lines.append(f"TEST FAIL: {words} results are invalid")
            return _Check(False, lines, [_invalid(run, run.role)])
        if run.error_count:
            lines.append(f"WARNING: {run.error_count} ERROR reported in {words.lower()} results")
    if audit.scenario != reference.scenario:
        lines.append("Test and reference scenarios do not match!")
        return _Check(False, lines, [_scenarios_differ(reference, audit)])
    (ref_text, ref_rate), (test_text, test_rate) = _test04_rate(reference), _test04_rate(audit)
    lines += [f"reference score = {ref_text}", f"test score = {test_text}"]
    tolerance = _TOLERANCE
    # MLCommons compares the *rate* with the latency bounds here (see the module's docstring).
    if ref_rate <= _SHORT_LATENCY_NS.get(reference.scenario, -1):
        tolerance = _SHORT_TOLERANCE
    if test_rate < ref_rate * (1 + tolerance):
        return _Check(True, [*lines, TEST_PASS])
    lines.append("TEST FAIL: Test score invalid")
    faster = (test_rate / ref_rate - 1) if ref_rate else float("inf")
    return _Check(
        False,
        lines,
        [
            f"performance: the audit run (the same sample every time) was {faster:.0%} faster than"
            f" the reference run (at most {tolerance:.0%}): does the system cache results?"
        ],
    )


_TEST05_TOLERANCE = 0.05


def _test05_performance(reference: _Run, audit: _Run) -> _Check:
    """v4.0's TEST05 verification: the audit run no more than 5% worse than the reference (20% for
    SingleStream at most 0.2 ms or MultiStream at most 1.6 ms)."""
    lines = ["Verifying performance."]
    for run, words in ((reference, "Reference"), (audit, "Test")):
        if not run.valid:
            lines.append(f"TEST FAIL: {words} results are invalid")
            return _Check(False, lines, [_invalid(run, run.role)])
        if run.error_count:
            lines.append(f"WARNING: {run.error_count} ERROR reported in {words.lower()} results")
    if audit.scenario != reference.scenario:
        lines.append("Test and reference scenarios do not match!")
        return _Check(False, lines, [_scenarios_differ(reference, audit)])
    scores: list[float] = []
    for run in (reference, audit):
        key = _METRIC_KEYS.get(run.scenario)
        value = run.entries.get(key) if key is not None else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            lines.append(f"TEST FAIL: no {key or 'metric'} in {run.detail}")
            return _Check(
                False, lines, [f"performance: {run.detail} logs no {run.scenario} metric"]
            )
        scores.append(float(value))
    ref_score, test_score = scores
    lines += [f"reference score = {ref_score:g}", f"test score = {test_score:g}"]
    tolerance = _TEST05_TOLERANCE
    if ref_score <= _SHORT_LATENCY_NS.get(reference.scenario, -1):
        tolerance = _SHORT_TOLERANCE
    latency = reference.scenario in _LATENCY_SCENARIOS
    passed = (
        test_score < ref_score * (1 + tolerance)
        if latency
        else test_score > ref_score * (1 - tolerance)
    )
    if passed:
        return _Check(True, [*lines, TEST_PASS])
    lines.append("TEST FAIL: Test score invalid")
    unit = "ns" if latency else "samples/s"
    return _Check(
        False,
        lines,
        [
            f"performance: under TEST05's seeds the audit run's {test_score:g} {unit} is more than"
            f" {tolerance:.0%} worse than the reference run's {ref_score:g} {unit}"
        ],
    )


def _scenarios_differ(reference: _Run, audit: _Run) -> str:
    return (
        f"performance: the audit run is {audit.scenario or '?'}, the reference run"
        f" {reference.scenario or '?'}"
    )


# --- TEST01 accuracy -----------------------------------------------------------------------------


def _first_value(response: LoggedResponse, dtype: np.dtype[Any], log: Path) -> Any:
    """The response's first value as `dtype`, or None for an empty response."""
    data = response.data
    if len(data) % dtype.itemsize:
        raise HarnessError(
            f"{log}: qsl_idx {response.qsl_idx}'s response is {len(data)} bytes, not a whole number"
            f" of {dtype.name} values: is {dtype.name} the benchmark's response type?"
        )
    return np.frombuffer(data[: dtype.itemsize], dtype=dtype)[0] if data else None


@dataclass
class ResponseComparison:
    """TEST01's deterministic check: MLCommons' verify_accuracy.py's counters, under its names."""

    num_acc_log_entries: int = 0
    num_acc_log_duplicate_keys: int = 0
    num_acc_log_data_mismatch: int = 0
    num_perf_log_entries: int = 0
    num_perf_log_qsl_idx_match: int = 0
    num_perf_log_data_mismatch: int = 0
    num_missing_qsl_idxs: int = 0

    @property
    def passed(self) -> bool:
        return self.num_perf_log_data_mismatch == 0 and self.num_perf_log_qsl_idx_match > 0

    def lines(self) -> list[str]:
        counters = [f"{name} = {value}" for name, value in vars(self).items()]
        verdict = TEST_PASS if self.passed else "TEST FAIL"
        return [
            "Verifying accuracy. This might take a while...",
            "Reading accuracy mode results...",
            "Reading performance mode results...",
            *counters,
            verdict,
            "",  # MLCommons prints the verdict with its own newline
        ]


def compare_accuracy_logs(accuracy_log: Path, audit_log: Path, dtype: str) -> ResponseComparison:
    """Compare an audit run's logged responses with an accuracy run's (TEST01's first check)."""
    return _compare(
        read_accuracy_log(accuracy_log),
        read_accuracy_log(audit_log),
        _response_dtype(dtype),
        accuracy_log,
        audit_log,
    )


def _compare(
    accuracy: Sequence[LoggedResponse],
    audit: Sequence[LoggedResponse],
    dtype: np.dtype[Any],
    accuracy_log: Path,
    audit_log: Path,
) -> ResponseComparison:
    result = ResponseComparison(num_acc_log_entries=len(accuracy), num_perf_log_entries=len(audit))
    # The response to compare with, and its log.
    responses: dict[int, tuple[LoggedResponse, Path]] = {}
    for entry in accuracy:
        if entry.qsl_idx in responses:
            result.num_acc_log_duplicate_keys += 1
            result.num_acc_log_data_mismatch += responses[entry.qsl_idx][0].hex != entry.hex
        else:
            responses[entry.qsl_idx] = (entry, accuracy_log)
    for entry in audit:
        value = _first_value(entry, dtype, audit_log)
        if entry.qsl_idx in responses:
            result.num_perf_log_qsl_idx_match += 1
            earlier, log = responses[entry.qsl_idx]
            expected = _first_value(earlier, dtype, log)
            if value is None or expected is None:
                result.num_perf_log_data_mismatch += (value is None) != (expected is None)
            else:
                result.num_perf_log_data_mismatch += bool(value != expected)
        else:
            result.num_missing_qsl_idxs += 1
        # As MLCommons does: a sample the audit run logged again is compared with its last
        # logged response, whichever run logged it.
        responses[entry.qsl_idx] = (entry, audit_log)
    return result


def _test01_accuracy(
    accuracy: _Run,
    audit: _Run,
    content: Path,
    scratch: Path,
    dtype: np.dtype[Any],
    score: Callable[[Path], float] | None,
    allowed_percent: float,
    metric_line: Callable[[float], str],
) -> _Check:
    accuracy_log, audit_log = accuracy.path / ACCURACY_FILE, audit.path / ACCURACY_FILE
    accuracy_entries = read_accuracy_log(accuracy_log)
    audit_entries = read_accuracy_log(audit_log)
    comparison = _compare(accuracy_entries, audit_entries, dtype, accuracy_log, audit_log)
    _write_lines(content / VERIFY_ACCURACY, comparison.lines())
    out = content / "accuracy"
    out.mkdir()
    staged_log = out / ACCURACY_FILE
    shutil.copy2(audit_log, staged_log)
    # accuracy.txt: the metric over the audit run's samples, as NVIDIA's flow writes it (the
    # checker only needs the file; truncation appends the log's hash to it).
    compliance = score(staged_log) if score is not None else None
    (out / ACCURACY_TXT).write_text("" if compliance is None else metric_line(compliance) + "\n")
    if comparison.passed:
        return _Check(True, comparison.lines())
    differ = (
        f"accuracy: {comparison.num_perf_log_data_mismatch} of the"
        f" {comparison.num_perf_log_qsl_idx_match} responses the audit run logged for samples the"
        f" accuracy run logged differ from it (compared as {dtype.name})"
    )
    if comparison.num_perf_log_qsl_idx_match == 0:
        return _Check(
            False,
            comparison.lines(),
            [
                f"accuracy: none of the {len(audit_entries)} responses the audit run logged is of"
                " a sample the accuracy run logged: nothing to compare"
            ],
        )
    if score is None or compliance is None:
        return _Check(False, comparison.lines(), [f"{differ}, and there is no metric for Part III"])
    baseline = _part_iii_baseline(accuracy_entries, audit_entries, scratch)
    baseline_score = score(baseline)
    (out / BASELINE_ACCURACY).write_text(metric_line(baseline_score) + "\n")
    (out / COMPLIANCE_ACCURACY).write_text(metric_line(compliance) + "\n")
    if baseline_score == 0 or compliance == 0:
        return _Check(
            False,
            comparison.lines(),
            [f"{differ}; Part III: a score of 0 cannot be compared (the checker rejects it)"],
        )
    delta = abs(1 - baseline_score / compliance) * 100
    scores = (
        f"the audit run's score {compliance:g} and the accuracy run's {baseline_score:g} over the"
        f" same samples differ by {delta:.3f}% (at most {allowed_percent:g}%)"
    )
    if delta <= allowed_percent:
        return _Check(True, comparison.lines(), notes=[f"{differ}; passed by Part III: {scores}"])
    return _Check(False, comparison.lines(), [f"{differ}; Part III: {scores}"])


def _part_iii_baseline(
    accuracy: Sequence[LoggedResponse], audit: Sequence[LoggedResponse], scratch: Path
) -> Path:
    """The accuracy run's responses for the samples the audit run logged (MLCommons'
    create_accuracy_baseline.sh), as an accuracy log the benchmark's scorer reads."""
    sampled = {entry.qsl_idx for entry in audit}
    entries = [
        {"seq_id": seq_id, "qsl_idx": entry.qsl_idx, "data": entry.hex}
        for seq_id, entry in enumerate(e for e in accuracy if e.qsl_idx in sampled)
    ]
    path = scratch / "mlperf_log_accuracy_baseline.json"
    path.write_text(json.dumps(entries, indent=0) + "\n")
    return path


# --- files ---------------------------------------------------------------------------------------


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def _replace_dir(new: Path, final: Path, staging: Path) -> None:
    """Rename the finished directory into place; what was there goes into `staging`, removed
    with it."""
    if final.exists() or final.is_symlink():
        os.replace(final, staging / "previous")
    os.replace(new, final)
