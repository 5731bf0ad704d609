"""Finding what a submission report shows: a staged tree's results/<system>/<model>/<scenario>/
directories, or plain run log directories grouped by system, benchmark and scenario."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import DETAIL_FILE
from mlperf_harness.report.rundata import RunData, is_run_dir, read_run
from mlperf_harness.report.submission_page import ScenarioEntry
from mlperf_harness.run_files import RESULT_FILE
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.select_runs import beside_audit_run

SCENARIO_ORDER = ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")
VERIFY_FILES = ("verify_accuracy.txt", "verify_performance.txt")


@dataclass
class Found:
    entries: list[ScenarioEntry] = field(default_factory=list)
    systems: dict[str, dict[str, Any]] = field(default_factory=dict)


def find(sources: Sequence[Path]) -> Found:
    """Everything under `sources`: staged trees (a results/ directory somewhere inside) and run
    log directories, each as it is found."""
    found = Found()
    loose: list[RunData] = []
    for source in sources:
        if not source.exists():
            raise HarnessError(f"no such file or directory: {source}")
        if not source.is_dir():
            raise HarnessError(f"{source} is not a directory (give a run directory or a tree)")
        scenario_dirs = _staged_scenario_dirs(source)
        if scenario_dirs:
            for scenario_dir in scenario_dirs:
                found.entries.append(_staged_entry(scenario_dir))
            for results in sorted({d.parents[2] for d in scenario_dirs}):
                found.systems.update(_systems(results.parent / "systems"))
        else:
            loose.extend(read_run(d) for d in _run_dirs(source))
    found.entries.extend(_group_runs(loose))
    if not found.entries:
        named = ", ".join(str(s) for s in sources)
        raise HarnessError(f"found no LoadGen runs ({DETAIL_FILE}) under {named}")
    return found


def _staged_scenario_dirs(root: Path) -> list[Path]:
    """results/<system>/<model>/<scenario>/ directories with a performance/run_1 detail log."""
    pattern = f"results/*/*/*/performance/run_1/{DETAIL_FILE}"
    hits = (
        set(root.glob(pattern)) | set(root.glob(f"*/{pattern}")) | set(root.glob(f"*/*/{pattern}"))
    )
    if root.name == "results":
        hits |= set(root.glob(f"*/*/*/performance/run_1/{DETAIL_FILE}"))
    return sorted({hit.parents[2] for hit in hits}, key=_scenario_key)


def _scenario_key(scenario_dir: Path) -> tuple[str, str, int, str]:
    name = scenario_dir.name
    rank = SCENARIO_ORDER.index(name) if name in SCENARIO_ORDER else len(SCENARIO_ORDER)
    return (scenario_dir.parent.parent.name, scenario_dir.parent.name, rank, name)


def _staged_entry(scenario_dir: Path) -> ScenarioEntry:
    system, model = scenario_dir.parent.parent.name, scenario_dir.parent.name
    hints = {"system_hint": system, "model_hint": model}
    performance = read_run(scenario_dir / "performance" / "run_1", **hints)
    accuracy_dir = scenario_dir / "accuracy"
    accuracy = read_run(accuracy_dir, **hints) if is_run_dir(accuracy_dir) else None
    # Beside the result since v6.0; before, under compliance/<system>/<model>/<scenario>/.
    compliance = scenario_dir.parents[3] / "compliance" / system / model / scenario_dir.name
    audits = {
        audit.name: _audit_outcome(audit)
        for base in (scenario_dir, compliance)
        for audit in sorted(base.glob("TEST*"))
        if audit.is_dir()
    }
    notes = []
    if accuracy is None:
        notes.append(f"No accuracy run in {accuracy_dir}.")
    return ScenarioEntry(
        system, model, scenario_dir.name, performance, accuracy, audits, tuple(notes)
    )


def _audit_outcome(audit_dir: Path) -> str:
    """PASS where every verification file says TEST PASS; FAIL where one says TEST FAIL."""
    texts = [
        (audit_dir / name).read_text(encoding="utf-8", errors="replace")
        for name in VERIFY_FILES
        if (audit_dir / name).is_file()
    ]
    if not texts:
        return "not verified"
    if any("TEST FAIL" in t for t in texts):
        return "FAIL"
    if all("TEST PASS" in t for t in texts):
        return "PASS"
    return "unclear"


def _systems(systems_dir: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(systems_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise HarnessError(f"cannot read the system description {path}: {error}") from None
        if isinstance(data, dict):
            out[path.stem] = data
    return out


def _run_dirs(root: Path) -> list[Path]:
    """Run directories hold our result.json beside LoadGen's logs (a verified audit's copy of
    the logs does not)."""
    if is_run_dir(root):
        return [root]
    return sorted(
        path.parent for path in root.rglob(DETAIL_FILE) if (path.parent / RESULT_FILE).is_file()
    )


def _group_runs(runs: Iterable[RunData]) -> list[ScenarioEntry]:
    """Plain run directories: per (system, benchmark, scenario), the newest performance run and
    the newest accuracy run (directory names sort by time as run_harness makes them); audit runs
    by their LoadGen verdict (their verification is not in a run directory)."""
    groups: dict[tuple[str, str, str], list[RunData]] = {}
    for run in runs:
        groups.setdefault((run.system_name, run.benchmark, run.scenario), []).append(run)
    entries = []
    for (system, benchmark, scenario), members in groups.items():
        members.sort(key=lambda r: str(r.directory))
        performance = [r for r in members if r.mode == "PerformanceOnly" and not r.audit_test]
        accuracy = [r for r in members if r.mode == "AccuracyOnly"]
        audits = {str(r.audit_test): _audit_run_outcome(r) for r in members if r.audit_test}
        notes = [f"Run directories: {', '.join(str(r.directory) for r in members)}."]
        if len(performance) > 1:
            notes.append(f"{len(performance)} performance runs: the newest is shown.")
        entries.append(
            ScenarioEntry(
                system,
                benchmark,
                scenario,
                performance[-1] if performance else None,
                accuracy[-1] if accuracy else None,
                audits,
                tuple(notes),
            )
        )
    return sorted(entries, key=lambda e: (e.system, e.model, _rank(e.scenario)))


def _audit_run_outcome(run: RunData) -> str:
    """The verdict of the audit's verification where the submission pipeline left it beside the
    run, else only the run's own LoadGen verdict."""
    verified = beside_audit_run(run.directory, AuditTest.parse(str(run.audit_test)))
    outcome = _audit_outcome(verified)
    return outcome if outcome != "not verified" else f"run {run.verdict} (not verified here)"


def _rank(scenario: str) -> int:
    return SCENARIO_ORDER.index(scenario) if scenario in SCENARIO_ORDER else len(SCENARIO_ORDER)
