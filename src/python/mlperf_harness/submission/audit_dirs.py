"""A verified audit directory (TEST0x/, as verification writes it): complete, and did it pass?

What MLCommons' v6.1 checker wants there: verify_performance.txt and performance/run_1/ with only
LoadGen's logs for TEST01 and TEST04; for TEST01 also verify_accuracy.txt and accuracy/ with the
audit's accuracy log and accuracy.txt. TEST06 (LLMs) has no performance part: verify_accuracy.txt
with its three check lines and accuracy/ with the audit's accuracy log.
"""

from __future__ import annotations

import re
from pathlib import Path

from mlperf_harness.loadgen.results import ACCURACY_FILE, DETAIL_FILE, SUMMARY_FILE
from mlperf_harness.run_files import ACCURACY_TXT
from mlperf_harness.submission.logged_run import read_text
from mlperf_harness.submission.rules import AuditTest, model_rules

VERIFY_ACCURACY = "verify_accuracy.txt"
VERIFY_PERFORMANCE = "verify_performance.txt"
TEST_PASS = "TEST PASS"
# What the checker lets an audit's performance/run_1/ hold ("file list mismatch" otherwise).
AUDIT_RUN_FILES = frozenset(
    {SUMMARY_FILE, DETAIL_FILE, ACCURACY_FILE, "mlperf_log_trace.json", ".gitkeep"}
)
# TEST01 part III: when responses differ, these score the audit run against the accuracy run.
PART_THREE_FILES = ("baseline_accuracy.txt", "compliance_accuracy.txt")


def has_performance_run(test: AuditTest) -> bool:
    """Whether the audit is a performance run (TEST01, TEST04, TEST05) staged in performance/run_1
    and compared with verify_performance.txt; TEST06 only checks the audit run's responses."""
    return test is not AuditTest.TEST06


def audit_files(test: AuditTest) -> dict[str, str]:
    """Each file the verified TEST0x/ directory holds (relative to it), with what it is: what
    staging copies and what the preflight check asks of a staged audit."""
    name = test.value
    if not has_performance_run(test):
        return {
            VERIFY_ACCURACY: f"{name}'s checks (first token, EOS, sample length)",
            f"accuracy/{ACCURACY_FILE}": f"{name}'s audit run accuracy log",
        }
    files = {
        f"performance/run_1/{SUMMARY_FILE}": f"{name}'s audit run summary",
        f"performance/run_1/{DETAIL_FILE}": f"{name}'s audit run detail log",
        VERIFY_PERFORMANCE: f"{name}'s performance verification",
    }
    if test is AuditTest.TEST01:
        files[VERIFY_ACCURACY] = "TEST01's accuracy verification"
        files[f"accuracy/{ACCURACY_FILE}"] = "TEST01's (truncated) accuracy log"
        files[f"accuracy/{ACCURACY_TXT}"] = "TEST01's audit accuracy and hash"
    return files


def audit_missing(test: AuditTest, audit_dir: Path) -> list[str]:
    """What is missing from (or must not be in) the directory, one line each."""
    where = f"{test.value} {audit_dir}"
    if not audit_dir.is_dir():
        return [f"{where} is missing"]
    required = audit_files(test)
    problems = [f"{where} lacks {file}" for file in required if not (audit_dir / file).is_file()]
    run_dir = audit_dir / "performance" / "run_1"
    if run_dir.is_dir():
        extra = sorted(path.name for path in run_dir.iterdir() if path.name not in AUDIT_RUN_FILES)
        if extra:
            problems.append(
                f"{where}: performance/run_1 may hold only LoadGen's logs, not {', '.join(extra)}"
            )
    return problems


def audit_failures(test: AuditTest, audit_dir: Path, model: str) -> list[str]:
    """Which verification failed, one line each (for a complete directory)."""
    where = f"{test.value} {audit_dir}"
    failures = []
    if test is AuditTest.TEST06:
        if not test06_passes(read_text(audit_dir / VERIFY_ACCURACY)):
            failures.append(f"{where}: a TEST06 check failed ({VERIFY_ACCURACY})")
        return failures
    if TEST_PASS not in read_text(audit_dir / VERIFY_PERFORMANCE):
        failures.append(f"{where}: the performance verification failed ({VERIFY_PERFORMANCE})")
    if test is AuditTest.TEST01 and not _test01_accuracy_passes(audit_dir, model):
        failures.append(f"{where}: the accuracy verification failed ({VERIFY_ACCURACY})")
    return failures


def audit_problems(test: AuditTest, audit_dir: Path, model: str) -> list[str]:
    """Incomplete or failed: empty when the audit can be staged as passed."""
    return audit_missing(test, audit_dir) or audit_failures(test, audit_dir, model)


def test06_passes(text: str) -> bool:
    """As MLCommons' checker reads TEST06's verify_accuracy.txt: each check's True (the first
    token's Skipped, in Offline) line present."""
    lines = {line.strip() for line in text.splitlines()}
    return (
        bool({"First token check pass: True", "First token check pass: Skipped"} & lines)
        and "EOS check pass: True" in lines
        and "Sample length check pass: True" in lines
    )


def _test01_accuracy_passes(audit_dir: Path, model: str) -> bool:
    """The line TEST PASS, or else part III: the audit run's accuracy within 1% of the accuracy
    run's (0.1% for 99.9 models), as MLCommons' checker judges it."""
    lines = [line.strip() for line in read_text(audit_dir / VERIFY_ACCURACY).splitlines()]
    if TEST_PASS in lines:
        return True
    baseline, compliance = (
        _first_score(audit_dir / "accuracy" / name) for name in PART_THREE_FILES
    )
    if not baseline or not compliance:
        return False
    allowed_percent = model_rules(model).test01_accuracy_delta_percent
    return abs(1 - baseline / compliance) * 100 <= allowed_percent


def _first_score(path: Path) -> float:
    """The first `metric=value` of an accuracy file (`accuracy=76.123%, good=...`); 0 if none."""
    match = re.search(r"^\w+=\s*(\d+(?:\.\d+)?)", read_text(path), re.MULTILINE)
    return float(match.group(1)) if match else 0.0
