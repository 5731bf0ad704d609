"""Stage runs as a submission tree, `<tree>/<division>/<submitter>/`, in the layout of the round
the runs were made for (submission/rounds: each round's Layout). Since v6.0:

    results/<system>/<model>/<scenario>/performance/run_1/   LoadGen's summary and detail logs
                                        accuracy/            summary, detail, accuracy log, accuracy.txt
                                        measurements.json, user.conf, README.md
                                        TEST01/, TEST04/     as verification wrote them
    systems/<system>.json   src/README.md   documentation/calibration.md

Before v6.0 (v5.1, v5.0, v4.0) results/ holds only performance/ and accuracy/; the rest is beside it:

    measurements/<system>/<model>/<scenario>/<system>_mlperf_harness_<scenario>.json, user.conf,
                                            README.md (and mlperf.conf in v4.0)
    compliance/<system>/<model>/<scenario>/TEST01/, TEST04/ (and TEST05/ in v4.0)
    code/README.md (v4.0: code/<model>/mlperf_harness/README.md, where its checker looks)

The runs are checked first (stage_checks) and refused with one line per problem, a run made for
another round among them. The tree is built in a hidden directory of `<tree>` and renamed into
place, so an interrupted staging leaves no half tree, and staging again replaces the tree.
select_runs picks the runs when the caller names none.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from mlperf_harness.atomic import staging_directory, write_json_atomic
from mlperf_harness.errors import HarnessError
from mlperf_harness.run_files import USER_CONF_FILE
from mlperf_harness.submission.logged_run import ACCURACY_FILES, PERFORMANCE_FILES, read_run
from mlperf_harness.submission.rounds import DEFAULT_ROUND, get_round
from mlperf_harness.submission.rounds.facts import Round
from mlperf_harness.submission.runs import ScenarioRuns
from mlperf_harness.submission.stage_checks import staging_problems
from mlperf_harness.submission.stage_texts import (
    IMPLEMENTATION,
    StagedScenario,
    calibration_text,
    measurements,
    mlperf_conf_text,
    scenario_readme,
    source_readme,
)
from mlperf_harness.write_errors import writing

# Hidden, beside the divisions: MLCommons' checker walks only closed/, open/ and network/.
STAGING_PREFIX = ".staging-"
README_FILE = "README.md"
COMPLIANCE_IMAGES_DIR = "images"  # beside an accuracy log: SDXL's compliance images


def stage(
    runs: Sequence[ScenarioRuns],
    tree: Path,
    *,
    division: str,
    submitter: str,
    system_descriptions: Mapping[str, Mapping[str, str]],
    allow_invalid: bool = False,
    source_dir: Path | None = None,
    before_commit: Callable[[Path], None] | None = None,
    round_name: str = DEFAULT_ROUND,
) -> Path:
    """Lay `runs` out as `<tree>/<division>/<submitter>/`, replacing what was there; returns it.

    `system_descriptions`: systems/<system>.json of each system the runs name (system_description).
    `allow_invalid`: stage INVALID performance runs, accuracy below target and failed audits (their
    README says so; the tree is no valid submission). `source_dir`: the checkout whose commit
    src/README.md names (default: the working directory, which `pants run` sets to the repository
    root). `before_commit(staging_root)` runs on the finished tree before it is renamed into place
    (it lies at `staging_root/<division>/<submitter>/`), e.g. to truncate the accuracy logs, so that
    only a complete tree ever appears in `tree`. `round_name`: the round the runs were made for
    (each run's result.json says so), whose layout and rules the tree follows.
    """
    table = get_round(round_name)
    problems = staging_problems(
        runs,
        division=division,
        submitter=submitter,
        system_descriptions=system_descriptions,
        allow_invalid=allow_invalid,
        round_name=table.name,
    )
    if problems:
        raise HarnessError(f"cannot stage: {'; '.join(problems)}")
    target = tree / division / submitter
    with writing(tree):  # a full disk or a read-only tree: one line
        tree.mkdir(parents=True, exist_ok=True)
        for leftover in tree.glob(f"{STAGING_PREFIX}*"):  # an interrupted staging's
            shutil.rmtree(leftover, ignore_errors=True)
        staging = staging_directory(tree, STAGING_PREFIX)
        try:
            root = staging / division / submitter
            _write_tree(runs, root, system_descriptions, source_dir or Path.cwd(), table)
            if before_commit is not None:
                before_commit(staging)
            target.parent.mkdir(exist_ok=True)
            if target.exists():
                # Out of the way first (removed with the staging directory): os.replace cannot
                # put a directory over a non-empty one.
                os.replace(target, staging / "replaced")
            os.replace(root, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _write_tree(
    runs: Sequence[ScenarioRuns],
    root: Path,
    system_descriptions: Mapping[str, Mapping[str, str]],
    source_dir: Path,
    table: Round,
) -> None:
    layout = table.layout
    scenarios: list[StagedScenario] = []
    for scenario_runs in runs:
        performance = read_run(scenario_runs.performance_dir)
        staged = StagedScenario(
            scenario_runs,
            performance,
            read_run(scenario_runs.accuracy_dir),
            performance.engine_spec(),
        )
        where = (scenario_runs.system, scenario_runs.model, scenario_runs.scenario)
        result_dir = root / layout.result_dir(*where)
        measurements_dir = root / layout.measurements_dir(*where)
        audits_dir = root / layout.audits_dir(*where)
        _copy_files(performance.path, result_dir / "performance" / "run_1", PERFORMANCE_FILES)
        _copy_files(scenario_runs.accuracy_dir, result_dir / "accuracy", ACCURACY_FILES)
        # SDXL's compliance images (accuracy/images/<id>.png and captions.txt), where the run
        # wrote them: the checker asks for them by name in the rounds that list them.
        if (scenario_runs.accuracy_dir / COMPLIANCE_IMAGES_DIR).is_dir():
            shutil.copytree(
                scenario_runs.accuracy_dir / COMPLIANCE_IMAGES_DIR,
                result_dir / "accuracy" / COMPLIANCE_IMAGES_DIR,
            )
        _copy_user_conf(performance.path / USER_CONF_FILE, measurements_dir / USER_CONF_FILE)
        name = layout.measurements_name(
            scenario_runs.system, IMPLEMENTATION, scenario_runs.scenario
        )
        write_json_atomic(measurements_dir / name, measurements(staged))
        if "mlperf.conf" in layout.measurement_files:
            _write_text(measurements_dir / "mlperf.conf", mlperf_conf_text(staged))
        for test, audit_dir in sorted(scenario_runs.audit_dirs.items(), key=lambda i: i[0].value):
            shutil.copytree(audit_dir, audits_dir / test.value)
        audits_at = None if layout.together else audits_dir.relative_to(root).as_posix()
        readme = scenario_readme(staged, audits_at=audits_at, source_dir=layout.source_dir)
        _write_text(measurements_dir / README_FILE, readme)
        scenarios.append(staged)
    for system in sorted({scenario_runs.system for scenario_runs in runs}):
        write_json_atomic(root / "systems" / f"{system}.json", dict(system_descriptions[system]))
    readme = source_readme(source_dir)
    _write_text(root / layout.source_dir / README_FILE, readme)
    for model in sorted({scenario_runs.model for scenario_runs in runs}):
        code_dir = layout.code_dir(model, IMPLEMENTATION)
        if code_dir != PurePosixPath(layout.source_dir):
            _write_text(root / code_dir / README_FILE, readme)
    _write_text(root / "documentation" / "calibration.md", calibration_text(scenarios))


def _copy_files(source: Path, destination: Path, files: Iterable[str]) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for file in files:
        shutil.copyfile(source / file, destination / file)


def _copy_user_conf(source: Path, destination: Path) -> None:
    text = source.read_text()
    if not text.strip():  # the checker refuses an empty user.conf: say why it holds no settings
        text = "# This run applied no LoadGen settings over mlperf.conf.\n"
    _write_text(destination, text)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
