"""Truncate a staged tree's accuracy logs as MLCommons' tools/submission/truncate_accuracy_log.py
does, keeping the whole logs outside the tree.

For each accuracy directory (results/<system>/<model>/<scenario>/accuracy/ and its TEST01/accuracy/,
or before v6.0 compliance/<system>/<model>/<scenario>/TEST01/accuracy/, in every division:
MLCommons skips none): append `\\nhash=<sha256 of the whole log>\\n` to
accuracy.txt, then replace a log of 4096 bytes or more by its first 4096 bytes, `\\n\\n...\\n\\n` and
its last 4096 (LoadGen's accuracy logs are ASCII, so bytes are MLCommons' characters). The whole log
is first copied to `full_logs_dir` under the same relative path (MLCommons' --backup layout).

Safe to run again and to interrupt: the whole tree is checked before anything changes; each file
is replaced atomically, in an order that leaves a state the next run finishes (the copy, then the
hash, then the cut); a log whose hash is already there is never hashed again.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.run_files import ACCURACY_TXT

VIEWABLE_BYTES = 4096  # what truncation keeps of each end
ELLIPSIS = b"\n\n...\n\n"  # what it puts between them
DIVISIONS = ("closed", "open", "network")  # what MLCommons' tool walks
# The compliance tests that leave an accuracy log (TEST07 and TEST09, gpt-oss's, are not run here).
_AUDITS_WITH_ACCURACY = ("TEST01",)
_HASH_LINE = re.compile(r"^hash=(\w+)$")  # MLCommons' own pattern, line by line


def truncated(data: bytes) -> bytes:
    """What MLCommons' truncation leaves of a log: logs under 4096 bytes stay whole."""
    if len(data) < VIEWABLE_BYTES:
        return data
    return data[:VIEWABLE_BYTES] + ELLIPSIS + data[-VIEWABLE_BYTES:]


def looks_truncated(data: bytes) -> bool:
    """The shape truncation leaves (never a whole log: `...` between two halves is not JSON)."""
    return len(data) == 2 * VIEWABLE_BYTES + len(ELLIPSIS) and (
        data[VIEWABLE_BYTES : VIEWABLE_BYTES + len(ELLIPSIS)] == ELLIPSIS
    )


def accuracy_dirs(tree: Path) -> list[Path]:
    """Every accuracy directory truncation handles, in a stable order; a bad tree is one line."""
    if not tree.is_dir():
        raise HarnessError(f"no submission tree at {tree}")
    divisions = [tree / name for name in DIVISIONS if (tree / name).is_dir()]
    if not divisions:
        raise HarnessError(f"{tree} holds none of {', '.join(DIVISIONS)}: not a submission tree")
    found: list[Path] = []
    for division in divisions:
        for submitter in _subdirs(division):
            results = submitter / "results"
            if not results.is_dir():
                raise HarnessError(f"{submitter} has no results/ directory")
            for system in _subdirs(results):
                for model in _subdirs(system):
                    for scenario in _subdirs(model):
                        found.append(scenario / "accuracy")
                        found += _audit_accuracy_dirs(scenario)
            # Before v6.0 the audits are in compliance/<system>/<model>/<scenario>/.
            compliance = submitter / "compliance"
            if compliance.is_dir():
                for system in _subdirs(compliance):
                    for model in _subdirs(system):
                        for scenario in _subdirs(model):
                            found += _audit_accuracy_dirs(scenario)
    return found


def _audit_accuracy_dirs(scenario: Path) -> list[Path]:
    return [
        scenario / test / "accuracy" for test in _AUDITS_WITH_ACCURACY if (scenario / test).is_dir()
    ]


def _subdirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


@dataclass(frozen=True)
class _Plan:
    """What one accuracy directory needs."""

    log: Path
    accuracy_txt: Path
    data: bytes  # the log as it is in the tree
    hash_to_append: str | None  # None: accuracy.txt already has the log's hash
    cut: bool  # the log is whole and long enough to truncate


def _plan(directory: Path) -> _Plan | None:
    """None where nothing is left to do. Raises for a directory in no state truncation leaves."""
    log, accuracy_txt = directory / ACCURACY_FILE, directory / ACCURACY_TXT
    for path in (log, accuracy_txt):
        if not path.is_file():
            raise HarnessError(f"{path} is missing: stage the tree again")
    data = log.read_bytes()
    declared = _declared_hash(accuracy_txt)
    if declared is None:
        if looks_truncated(data):
            raise HarnessError(
                f"{log} is truncated but {accuracy_txt} has no hash= line: the whole log is no"
                " longer in the tree to hash; stage the tree again"
            )
        if not data.isascii():
            raise HarnessError(f"{log} is not ASCII: not a LoadGen accuracy log")
        return _Plan(
            log, accuracy_txt, data, hashlib.sha256(data).hexdigest(), len(data) >= VIEWABLE_BYTES
        )
    if looks_truncated(data):
        return None  # done: hashed, then cut
    if hashlib.sha256(data).hexdigest() != declared:
        raise HarnessError(
            f"{accuracy_txt}'s hash= is not the sha256 of {log}: the log changed after it was"
            " hashed; stage the tree again"
        )
    # Hashed whole: short enough to stay whole, or interrupted before the cut.
    return _Plan(log, accuracy_txt, data, None, True) if len(data) >= VIEWABLE_BYTES else None


def _declared_hash(accuracy_txt: Path) -> str | None:
    for line in accuracy_txt.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _HASH_LINE.match(line)
        if match:
            return match[1]  # the first, as MLCommons' tool and checker read it
    return None


def truncate_accuracy_logs(tree: Path, full_logs_dir: Path) -> list[Path]:
    """Hash and truncate every accuracy log in `tree` (the directory holding closed/, open/...),
    keeping each whole log at `full_logs_dir`/<its path relative to the tree>. Returns the logs
    it changed or hashed this time; a second run returns [] and changes nothing."""
    if full_logs_dir.resolve().is_relative_to(tree.resolve()):
        raise HarnessError(f"keep the full accuracy logs outside the tree, not in {full_logs_dir}")
    plans = [plan for directory in accuracy_dirs(tree) if (plan := _plan(directory)) is not None]
    for plan in plans:
        # The whole log first: from here on the tree may hold only its truncation.
        full = full_logs_dir / plan.log.relative_to(tree)
        if not (full.is_file() and full.read_bytes() == plan.data):
            write_bytes_atomic(full, plan.data)
        if plan.hash_to_append is not None:
            text = plan.accuracy_txt.read_bytes()
            write_bytes_atomic(plan.accuracy_txt, text + f"\nhash={plan.hash_to_append}\n".encode())
        if plan.cut:
            write_bytes_atomic(plan.log, truncated(plan.data))
    return [plan.log for plan in plans]
