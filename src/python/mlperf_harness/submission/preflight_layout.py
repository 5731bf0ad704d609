"""The preflight check's walk of a staged tree: divisions, submitters, systems, models, scenarios,
the files each directory must hold, and the hygiene MLCommons' older checker enforced (no hidden
names, spaces, __pycache__, empty directories, broken links or files over 50 MB).

The layout is the round's (rounds/, each round's Layout). Since v6.0 (`closed|open/<submitter>/`):
`systems/<system>.json`, `src/`, `documentation/calibration.md`, `results/<system>/<model>/
<scenario>/{performance/run_1, accuracy, measurements.json, user.conf, README.md, TEST01/,
TEST04/}`. Before v6.0: `code/`; results/ holds performance/ and accuracy/ only; each result's
JSON (`<system>_<implementation>_<scenario>.json`), user.conf and README.md (and v4.0's
mlperf.conf) are under `measurements/<system>/<model>/<scenario>/`, its audits under
`compliance/<system>/<model>/<scenario>/`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE, DETAIL_FILE, SUMMARY_FILE
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.run_files import ACCURACY_TXT
from mlperf_harness.submission.audit_dirs import audit_files as staged_audit_files
from mlperf_harness.submission.preflight_problem import Kind, Problems
from mlperf_harness.submission.rounds import DEFAULT_ROUND, ROUNDS
from mlperf_harness.submission.rounds.facts import Round
from mlperf_harness.submission.rules import DIVISIONS, AuditTest, ModelRules

PERFORMANCE_RUN = Path("performance", "run_1")
# The checker's other names for our model directories (it maps "resnet50" to "resnet" itself).
MODEL_ALIASES = {"resnet": "resnet50"}
# What an audit's performance/run_1 may hold besides the summary and detail logs: anything else is
# the checker's "file list mismatch" (our result.json included).
AUDIT_RUN_OPTIONAL = frozenset({ACCURACY_FILE, "mlperf_log_trace.json", "results.json", ".gitkeep"})
_FILE_SIZE_LIMIT = 50 * 1024 * 1024
# The root may hold a README or a report beside the divisions, nothing else.
_ROOT_FILE_SUFFIXES = (".md", ".pdf")
_SYSTEM_TYPE_ALIASES = {"edge,datacenter": "datacenter,edge"}


@dataclass(frozen=True)
class ScenarioDir:
    """One results/<system>/<model>/<scenario>/ directory and what the walk learnt about it."""

    path: Path
    division: str
    submitter: str
    system: str
    rules: ModelRules | None  # None: a model the round's table does not know (open division)
    scenario: Scenario
    table: Round = ROUNDS[DEFAULT_ROUND]  # the round the tree is checked for
    # Where its audits' TEST0x/ and its measurement files are (the result's own directory since
    # v6.0); None: `path`.
    audits_base: Path | None = None
    measurements_base: Path | None = None

    @property
    def closed(self) -> bool:
        return self.division == "closed"

    def audit_dir(self, test: AuditTest) -> Path:
        return (self.audits_base or self.path) / test.value

    @property
    def measurements_dir(self) -> Path:
        return self.measurements_base or self.path

    @property
    def measurements_json(self) -> Path | None:
        """The result's measurements JSON: measurements.json, or before v6.0 the first file named
        for the system and scenario (as the checker picks it); None where there is none."""
        layout = self.table.layout
        if layout.measurements_json is not None:
            return self.measurements_dir / layout.measurements_json
        if not self.measurements_dir.is_dir():
            return None
        names = sorted(p.name for p in self.measurements_dir.iterdir() if p.is_file())
        for suffix in (f"_{self.scenario.value}.json", ".json"):
            for name in names:
                if name.startswith(self.system) and name.endswith(suffix):
                    return self.measurements_dir / name
        return None


def required_files(sdir: ScenarioDir) -> dict[Path, str]:
    """Each file a result must hold, wherever the round's layout puts it (its own directory, its
    measurements and compliance directories), with what it is (for the problem's line)."""
    files = {
        sdir.path / PERFORMANCE_RUN / SUMMARY_FILE: "the performance run's summary",
        sdir.path / PERFORMANCE_RUN / DETAIL_FILE: "the performance run's detail log",
        sdir.path / "accuracy" / SUMMARY_FILE: "the accuracy run's summary",
        sdir.path / "accuracy" / DETAIL_FILE: "the accuracy run's detail log",
        sdir.path / "accuracy" / ACCURACY_FILE: "the accuracy run's (truncated) accuracy log",
        sdir.path / "accuracy" / ACCURACY_TXT: "the accuracy run's score and hash",
    }
    layout = sdir.table.layout
    json_file = sdir.measurements_json
    if json_file is not None:
        files[json_file] = "what the engine ran"
    what = {
        "user.conf": "the LoadGen settings the runs applied",
        "README.md": "how to reproduce the results",
        "mlperf.conf": "the LoadGen settings under user.conf",
    }
    for name in layout.measurement_files:
        files[sdir.measurements_dir / name] = what.get(name, name)
    for test in audits(sdir.rules, sdir.division):
        base = sdir.audit_dir(test)
        files.update({base / relative: text for relative, text in audit_files(test).items()})
    return files


def audits(rules: ModelRules | None, division: str) -> tuple[AuditTest, ...]:
    """The audits the round asks of this model; the open division runs none."""
    return rules.audits if rules is not None and division == "closed" else ()


def audit_files(test: AuditTest) -> dict[Path, str]:
    """Relative to the audit's own TEST0x/ directory (audit_dirs: what verification writes)."""
    return {Path(relative): what for relative, what in staged_audit_files(test).items()}


def system_type_of(system_json: dict[str, Any] | None) -> str | None:
    value = system_json.get("system_type") if system_json else None
    if not isinstance(value, str):
        return None
    return _SYSTEM_TYPE_ALIASES.get(value, value)


def walk_tree(
    tree: Path, problems: Problems, table: Round = ROUNDS[DEFAULT_ROUND]
) -> list[ScenarioDir]:
    """Check the layout (the round's) and return every scenario directory found, for the per-run
    checks."""
    if not tree.is_dir():
        raise HarnessError(f"no staged tree at {tree}: give the directory holding closed/ or open/")
    found: list[ScenarioDir] = []
    divisions = 0
    for entry in sorted(tree.iterdir()):
        if entry.is_file() and not entry.name.endswith(_ROOT_FILE_SUFFIXES):
            problems.add(
                entry, "a file beside the divisions (only .md and .pdf may be)", Kind.LAYOUT
            )
        elif entry.is_dir() and entry.name not in DIVISIONS:
            problems.add(
                entry, f"not a division: the tree holds only {', '.join(DIVISIONS)}", Kind.LAYOUT
            )
        elif entry.is_dir():
            divisions += 1
            found += _walk_division(entry, problems, table)
    if not divisions:
        problems.add(tree, f"no division directory ({' or '.join(DIVISIONS)})", Kind.LAYOUT)
    return found


def load_system_json(path: Path, problems: Problems | None) -> dict[str, Any] | None:
    """The description, or None where it is no JSON object (said once, where `problems` is given)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        if problems is not None:
            problems.add(path, f"cannot be read as JSON: {error}", Kind.SYSTEM)
        return None
    if not isinstance(data, dict):
        if problems is not None:
            problems.add(path, "is not a JSON object", Kind.SYSTEM)
        return None
    return data


def _walk_division(division_dir: Path, problems: Problems, table: Round) -> list[ScenarioDir]:
    found: list[ScenarioDir] = []
    submitters = [entry for entry in sorted(division_dir.iterdir()) if entry.is_dir()]
    for entry in sorted(division_dir.iterdir()):
        if not entry.is_dir():
            problems.add(entry, "a file outside the submitter directories", Kind.LAYOUT)
    if not submitters:
        problems.add(division_dir, "no submitter directory", Kind.LAYOUT)
    for submitter_dir in submitters:
        _check_hygiene(submitter_dir, problems)
        found += _walk_submitter(submitter_dir, division_dir.name, problems, table)
    return found


def _walk_submitter(
    submitter_dir: Path, division: str, problems: Problems, table: Round
) -> list[ScenarioDir]:
    layout = table.layout
    wanted = ["systems", layout.source_dir, "results"]
    if division == "closed":
        wanted += [layout.audits_root, layout.measurements_root]
    else:
        wanted.append(layout.measurements_root)
    for name in dict.fromkeys(wanted):
        if not (submitter_dir / name).is_dir():
            problems.add(
                submitter_dir / name, f"missing directory ({table.name}'s layout)", Kind.LAYOUT
            )
    _check_other_layout(submitter_dir, table, problems)
    if division == "closed" and not (
        (submitter_dir / "documentation" / "calibration.md").is_file()
        or (submitter_dir / "calibration.md").is_file()
    ):
        problems.add(
            submitter_dir / "documentation" / "calibration.md",
            "missing: the closed division documents its calibration (or its absence) here",
            Kind.LAYOUT,
        )
    results_dir = submitter_dir / "results"
    systems_dir = submitter_dir / "systems"
    systems = (
        sorted(p.name for p in results_dir.iterdir() if p.is_dir()) if results_dir.is_dir() else []
    )
    if systems_dir.is_dir():
        for description in sorted(systems_dir.glob("*.json")):
            if description.stem not in systems:
                problems.add(description, "a system with no results/ directory", Kind.LAYOUT)
    found: list[ScenarioDir] = []
    for system in systems:
        description = systems_dir / f"{system}.json"
        system_json = None
        if description.is_file():
            system_json = load_system_json(description, None)  # its own check reports it
        else:
            problems.add(description, "missing: every system under results/ needs one", Kind.LAYOUT)
        found += _walk_system(
            results_dir / system, division, submitter_dir.name, system_json, problems, table
        )
    return found


def _check_other_layout(submitter_dir: Path, table: Round, problems: Problems) -> None:
    """A tree laid out for the other generation of checker: one line that says which."""
    layout = table.layout
    older = [
        name for name in ("code", "compliance", "measurements") if (submitter_dir / name).is_dir()
    ]
    if layout.together:
        if older:
            problems.add(
                submitter_dir / older[0],
                f"{', '.join(f'{n}/' for n in older)}: the layout before v6.0, not {table.name}'s"
                " (check the tree with the --round it was staged for)",
                Kind.LAYOUT,
            )
    elif (submitter_dir / "src").is_dir() and layout.source_dir != "src":
        problems.add(
            submitter_dir / "src",
            f"src/: the layout since v6.0, not {table.name}'s (its code is in {layout.source_dir}/)",
            Kind.LAYOUT,
        )


def _walk_system(
    system_dir: Path,
    division: str,
    submitter: str,
    system_json: dict[str, Any] | None,
    problems: Problems,
    table: Round,
) -> list[ScenarioDir]:
    found: list[ScenarioDir] = []
    submitter_dir = system_dir.parent.parent
    layout = table.layout
    for model_dir in sorted(p for p in system_dir.iterdir() if p.is_dir()):
        name = MODEL_ALIASES.get(model_dir.name, model_dir.name)
        rules = table.models.get(name)
        if rules is None and division == "closed":
            known = ", ".join(table.models)
            problems.add(
                model_dir,
                f"no {table.name} rules for model {model_dir.name!r} (known: {known})",
                Kind.LAYOUT,
            )
        scenarios = _scenario_dirs(model_dir, problems)
        if rules is not None and division == "closed":
            _check_scenarios(model_dir, rules, system_type_of(system_json), scenarios, problems)
        for scenario, path in scenarios.items():
            where = (system_dir.name, model_dir.name, scenario)
            sdir = ScenarioDir(
                path,
                division,
                submitter,
                system_dir.name,
                rules,
                scenario,
                table,
                audits_base=None
                if layout.audits_root == "results"
                else submitter_dir / layout.audits_dir(*where),
                measurements_base=None
                if layout.measurements_root == "results"
                else submitter_dir / layout.measurements_dir(*where),
            )
            found.append(sdir)
            _check_required_files(sdir, problems)
            if layout.code_per_model:
                _check_code_dir(sdir, submitter_dir, problems)
    return found


def _check_code_dir(sdir: ScenarioDir, submitter_dir: Path, problems: Problems) -> None:
    """v4.0: the code of the implementation the measurements JSON's name gives, as
    code/<model>/<implementation>/ (code/<model>/ will do)."""
    json_file = sdir.measurements_json
    if json_file is None:
        return  # reported as missing
    suffix = f"_{sdir.scenario.value}.json"
    name = json_file.name
    end = len(suffix) if name.endswith(suffix) else len(".json")
    implementation = name[len(sdir.system) + 1 : len(name) - end]
    model = sdir.path.parent.name
    code_dir = submitter_dir / sdir.table.layout.code_dir(model, implementation)
    if not code_dir.is_dir() and not code_dir.parent.is_dir():
        problems.add(
            code_dir,
            f"missing: {sdir.table.name}'s checker looks for the code of {name} here",
            Kind.LAYOUT,
        )


def _scenario_dirs(model_dir: Path, problems: Problems) -> dict[Scenario, Path]:
    scenarios: dict[Scenario, Path] = {}
    for path in sorted(p for p in model_dir.iterdir() if p.is_dir()):
        try:
            scenarios[Scenario.parse(path.name)] = path
        except HarnessError:
            problems.add(
                path, "not a scenario (Offline, Server, SingleStream, MultiStream)", Kind.LAYOUT
            )
    return scenarios


def _check_scenarios(
    model_dir: Path,
    rules: ModelRules,
    system_type: str | None,
    present: dict[Scenario, Path],
    problems: Problems,
) -> None:
    if system_type is None:
        return  # the system description's own check reports the missing system_type
    try:
        required = rules.required_scenarios(system_type)
        allowed = rules.allowed_scenarios(system_type)
    except HarnessError as error:
        problems.add(model_dir, str(error), Kind.SCENARIOS)
        return
    for scenario in required:
        if scenario not in present:
            problems.add(
                model_dir / scenario.value,
                f"missing: a {system_type} system must submit {rules.model} in "
                + ", ".join(s.value for s in required),
                Kind.SCENARIOS,
            )
    for scenario, path in present.items():
        if scenario not in allowed:
            problems.add(
                path,
                f"{scenario.value} is not a scenario of {rules.model} for a {system_type} system",
                Kind.SCENARIOS,
            )


def _check_required_files(scenario_dir: ScenarioDir, problems: Problems) -> None:
    tests = audits(scenario_dir.rules, scenario_dir.division)
    missing_audits = [test for test in tests if not scenario_dir.audit_dir(test).is_dir()]
    for test in missing_audits:
        problems.add(
            scenario_dir.audit_dir(test),
            f"missing: {scenario_dir.table.name} asks for the {test.value} audit",
            Kind.AUDIT,
        )
    if scenario_dir.measurements_json is None:
        problems.add(
            scenario_dir.measurements_dir
            / f"{scenario_dir.system}_*_{scenario_dir.scenario.value}.json",
            "missing (what the engine ran)",
            Kind.LAYOUT,
        )
    skipped = [scenario_dir.audit_dir(test) for test in missing_audits]
    for path, what in required_files(scenario_dir).items():
        if any(path.is_relative_to(audit) for audit in skipped):
            continue  # the whole audit is missing: said once above
        if not path.is_file():
            problems.add(path, f"missing ({what})", Kind.LAYOUT)
        elif path.stat().st_size == 0:
            problems.add(path, f"empty ({what})", Kind.LAYOUT)
    for test in tests:
        run_dir = scenario_dir.audit_dir(test) / PERFORMANCE_RUN
        if run_dir.is_dir():
            allowed = {SUMMARY_FILE, DETAIL_FILE} | AUDIT_RUN_OPTIONAL
            for entry in sorted(run_dir.iterdir()):
                if entry.name not in allowed:
                    problems.add(
                        entry,
                        "not allowed in an audit's performance/run_1 (only LoadGen's summary and "
                        "detail logs): the checker reports a file list mismatch",
                        Kind.LAYOUT,
                    )


def _check_hygiene(submitter_dir: Path, problems: Problems) -> None:
    """What MLCommons' review rejects anywhere in a submitter's directory."""
    for root, dirs, files in os.walk(submitter_dir):
        here = Path(root)
        if not dirs and not files:
            problems.add(here, "an empty directory", Kind.LAYOUT)
        for name in dirs + files:
            path = here / name
            if name.startswith("."):
                problems.add(path, "a hidden name (leftover or git-unfriendly)", Kind.LAYOUT)
            if " " in name:
                problems.add(path, "a name with a space", Kind.LAYOUT)
            if name == "__pycache__":
                problems.add(path, "a __pycache__ directory", Kind.LAYOUT)
            if path.is_symlink() and not path.exists():
                problems.add(path, "a broken symbolic link", Kind.LAYOUT)
        for name in files:
            path = here / name
            if path.is_file() and path.stat().st_size > _FILE_SIZE_LIMIT:
                problems.add(path, "larger than 50 MB", Kind.LAYOUT)
