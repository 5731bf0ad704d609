"""The preflight check of a scenario's accuracy files and audit verdicts: accuracy.txt's metric
against the model's target and its `hash=` line, the accuracy logs truncated as MLCommons' tool
truncates them, and each audit's verify_*.txt.

A truncated log cannot be hashed again: the check is that it has the truncated shape (its first
4096 characters, `\\n\\n...\\n\\n`, its last 4096) and that accuracy.txt carries a sha256. A log
small enough to be left whole must match its hash; with the full logs at hand (`full_logs`, laid
out as the tree is) the truncated ones are checked against them too.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.run_files import ACCURACY_TXT
from mlperf_harness.submission.audit_dirs import (
    VERIFY_ACCURACY,
    VERIFY_PERFORMANCE,
    has_performance_run,
    test06_passes,
)
from mlperf_harness.submission.preflight_layout import ScenarioDir
from mlperf_harness.submission.preflight_problem import Kind, Problems
from mlperf_harness.submission.rounds.facts import Round, metric_label
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.truncate import VIEWABLE_BYTES, looks_truncated, truncated

MAX_ACCURACY_LOG_BYTES = 10 * 1024  # the checker's limit on a staged accuracy log
_HASH_LINE = re.compile(r"^hash=(\w+)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_PART_III_FILES = ("baseline_accuracy.txt", "compliance_accuracy.txt")


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def hash_lines(accuracy_txt: Path) -> list[str]:
    return [m[1] for line in _read_lines(accuracy_txt) if (m := _HASH_LINE.match(line.strip()))]


def check_accuracy_dir(
    accuracy_dir: Path, problems: Problems, *, need_hash: bool, full_logs: Path | None
) -> None:
    """accuracy/ or TEST01/accuracy/: the hash line and the log's truncation."""
    accuracy_txt = accuracy_dir / ACCURACY_TXT
    log = accuracy_dir / ACCURACY_FILE
    if not accuracy_txt.is_file() or not log.is_file():
        return  # the layout check reports the missing file
    hashes = sorted(set(hash_lines(accuracy_txt)))
    if not hashes:
        if need_hash:
            problems.add(
                accuracy_txt,
                f"no hash= line (the sha256 of the full {ACCURACY_FILE}, appended when truncating)",
                Kind.TRUNCATION,
            )
    elif len(hashes) > 1:
        problems.add(accuracy_txt, f"{len(hashes)} different hash= lines", Kind.TRUNCATION)
    elif not _SHA256.match(hashes[0]):
        problems.add(
            accuracy_txt, f"hash={hashes[0]} is not a sha256 (64 hex digits)", Kind.TRUNCATION
        )
    declared = hashes[0] if len(hashes) == 1 and _SHA256.match(hashes[0]) else None
    _check_log_shape(log, declared, problems, full_logs)


def _check_log_shape(
    log: Path, declared: str | None, problems: Problems, full_logs: Path | None
) -> None:
    data = log.read_bytes()
    if len(data) > MAX_ACCURACY_LOG_BYTES:
        problems.add(
            log,
            f"{len(data):,} bytes: not truncated (at most {MAX_ACCURACY_LOG_BYTES:,}; truncation keeps "
            f"the first and last {VIEWABLE_BYTES} bytes)",
            Kind.TRUNCATION,
        )
        return
    try:
        json.loads(data)
        whole = True
    except (json.JSONDecodeError, UnicodeDecodeError):
        whole = False
    if whole:
        # Left whole (short, or already hashed when truncated): its own digest must be the hash.
        if declared is not None and hashlib.sha256(data).hexdigest() != declared:
            problems.add(log, "its sha256 is not accuracy.txt's hash= line", Kind.TRUNCATION)
        return
    if not looks_truncated(data):
        problems.add(
            log,
            f"neither a whole accuracy log nor truncated as MLCommons truncates (first {VIEWABLE_BYTES} "
            f"characters, '\\n\\n...\\n\\n', last {VIEWABLE_BYTES})",
            Kind.TRUNCATION,
        )
        return
    if full_logs is not None:
        _check_against_full_log(log, data, declared, problems, full_logs)


def _check_against_full_log(
    log: Path, data: bytes, declared: str | None, problems: Problems, full_logs: Path
) -> None:
    full = full_logs / log.relative_to(problems.tree)
    if not full.is_file():
        problems.add(log, f"no full log at {full} to check the truncation against", Kind.TRUNCATION)
        return
    full_data = full.read_bytes()
    if declared is not None and hashlib.sha256(full_data).hexdigest() != declared:
        problems.add(
            log, f"accuracy.txt's hash= is not the sha256 of the full log {full}", Kind.TRUNCATION
        )
    if truncated(full_data) != data:
        problems.add(log, f"not the truncation of the full log {full}", Kind.TRUNCATION)


def metric_values(accuracy_txt: Path, table: Round, metric: str) -> list[float]:
    """Every value of `metric` in an accuracy.txt, as the round's checker parses its lines."""
    pattern = re.compile(table.accuracy_patterns[metric])
    return [float(m[1]) for line in _read_lines(accuracy_txt) if (m := pattern.match(line.strip()))]


def check_accuracy_target(sdir: ScenarioDir, problems: Problems) -> None:
    accuracy_txt = sdir.path / "accuracy" / ACCURACY_TXT
    rules = sdir.rules
    if rules is None or not sdir.closed or not accuracy_txt.is_file():
        return
    for metric, target in rules.accuracy:
        values = metric_values(accuracy_txt, sdir.table, metric)
        if not values:
            problems.add(
                accuracy_txt,
                f"no {metric} line {sdir.table.name}'s checker can read",
                Kind.ACCURACY,
            )
        for value in values:
            if value < target:
                problems.add(
                    accuracy_txt,
                    f"{metric_label(metric)} {value:g} is below {rules.model}'s target "
                    f"{target:.3f}",
                    Kind.ACCURACY,
                )
    for metric, limit in rules.accuracy_upper:
        for value in metric_values(accuracy_txt, sdir.table, metric):
            if value > limit:
                problems.add(
                    accuracy_txt,
                    f"{metric} {value:g} is above {rules.model}'s upper limit {limit:.3f}",
                    Kind.ACCURACY,
                )


def check_verification(sdir: ScenarioDir, test: AuditTest, problems: Problems) -> None:
    test_dir = sdir.audit_dir(test)
    performance = test_dir / VERIFY_PERFORMANCE
    if performance.is_file():
        lines = _read_lines(performance)
        if not any("TEST PASS" in line for line in lines):
            problems.add(
                performance,
                f"{test.value}'s performance verification did not pass: {_verdict(lines)}",
                Kind.AUDIT_PERFORMANCE,
            )
    accuracy = test_dir / VERIFY_ACCURACY
    if not has_performance_run(test) and accuracy.is_file():
        lines = _read_lines(accuracy)
        if not test06_passes("\n".join(lines)):
            checks = [line.strip() for line in lines if "check pass:" in line]
            problems.add(
                accuracy,
                f"{test.value}'s checks did not all pass: {'; '.join(checks) or 'no check line'}",
                Kind.AUDIT,
            )
    if test is AuditTest.TEST01 and accuracy.is_file():
        lines = _read_lines(accuracy)
        if "TEST PASS" not in (line.strip() for line in lines):
            _check_part_iii(sdir, accuracy, lines, problems)


def _check_part_iii(sdir: ScenarioDir, verify: Path, lines: list[str], problems: Problems) -> None:
    """TEST01 without a deterministic pass: the audit run's accuracy must be close to the
    accuracy run's (1%, 0.1% for 99.9 models), from Part III's two accuracy files."""
    accuracy_dir = sdir.audit_dir(AuditTest.TEST01) / "accuracy"
    rules = sdir.rules
    paths = [accuracy_dir / name for name in _PART_III_FILES]
    if rules is None or not all(path.is_file() for path in paths):
        problems.add(
            verify,
            f"TEST01's accuracy verification did not pass ({_verdict(lines)}) and Part III's "
            f"{' and '.join(_PART_III_FILES)} are not in TEST01/accuracy",
            Kind.AUDIT,
        )
        return
    baseline, compliance = (metric_values(path, sdir.table, rules.metric) for path in paths)
    if not baseline or not compliance or not compliance[0]:
        problems.add(accuracy_dir, f"Part III's files hold no {rules.metric} line", Kind.AUDIT)
        return
    allowed = rules.test01_accuracy_delta_percent
    delta = abs(1 - baseline[0] / compliance[0]) * 100
    if delta > allowed:
        problems.add(
            accuracy_dir,
            f"TEST01 Part III: the audit run's {rules.metric} differs by {delta:.3f}% from the "
            f"accuracy run's (at most {allowed}%)",
            Kind.AUDIT,
        )


def _verdict(lines: list[str]) -> str:
    """The line that says why, for the problem's message."""
    for line in lines:
        if "FAIL" in line or "fail" in line.lower():
            return line.strip()
    stripped = [line.strip() for line in lines if line.strip()]
    return stripped[-1] if stripped else "the file is empty"
