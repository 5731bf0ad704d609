"""One submission, start to end: for each benchmark and scenario the performance run, the accuracy
run and each audit with its verification; then staging, truncation, the preflight check, the tarball,
the summary and the report.

Each run happens in a forked child (cli/child_run.py), through the same `plan_run` / `run_harness` as
every run target. Each run writes into a temporary sibling of its directory and is moved into place only when it finished,
with a resume record of its inputs (resume.py): an interrupted submission, started again with the same
arguments, skips what finished and redoes only what did not. Staging, truncation and packing are
cheap and are redone every time, each into a temporary name renamed into place, so an interrupted
submission never leaves a half-staged tree.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mlperf_harness.benchmarks.catalog import load_benchmark
from mlperf_harness.benchmarks.spec import STAND_IN_NOTICE, Benchmark
from mlperf_harness.cli.child_run import run_in_child
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.cli.run_settings import layer_settings, resolve_settings, show_config
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario, to_test_settings
from mlperf_harness.report.write import write_submission_report
from mlperf_harness.run_files import RESULT_FILE, result_record
from mlperf_harness.submission import resume
from mlperf_harness.submission.benchmark_audit import submission_model, verify_benchmark_audit
from mlperf_harness.submission.existing_runs import select_existing_runs
from mlperf_harness.submission.pack import pack
from mlperf_harness.submission.plan import RunStep, ScenarioSteps, StepKind, scenario_steps
from mlperf_harness.submission.preflight import check_tree
from mlperf_harness.submission.preflight_mlcommons import checker_problems, run_mlcommons_checker
from mlperf_harness.submission.preflight_problem import Kind, Problem
from mlperf_harness.submission.progress_line import ProgressLine
from mlperf_harness.submission.rounds import DEFAULT_ROUND, get_round
from mlperf_harness.submission.rounds.facts import check_runnable
from mlperf_harness.submission.rules import ModelRules
from mlperf_harness.submission.runs import ScenarioRuns
from mlperf_harness.submission.stage import stage
from mlperf_harness.submission.summary import write_summary
from mlperf_harness.submission.system_description import describe_this_system
from mlperf_harness.submission.truncate import truncate_accuracy_logs

_PARTIAL = ".partial"  # a run in progress writes to <dir>.partial, renamed into place when done


@dataclass(frozen=True)
class SubmissionRequest:
    benchmarks: tuple[str, ...]
    scenarios: tuple[Scenario, ...] | None  # None: those the system type requires
    submitter: str
    division: str
    system_type: str
    status: str
    out_dir: Path  # runs/, the staged tree, the tarball, summary and report
    full_results_dir: Path  # the full accuracy logs that truncation replaces in the tree
    run_args: tuple[str, ...] = ()  # flags for every run (backend, scratch path, model...)
    fast: bool = False
    system_description: Path | None = None  # a JSON of system-description fields to set
    inference_src: Path | None = None  # a checkout of mlcommons/inference: run its checker too
    checker_python: str | None = None  # the interpreter for that checker (it needs PyYAML)
    allow_invalid: bool = False  # stage INVALID or below-target runs (never a valid submission)
    stage_runs: tuple[Path, ...] = ()  # stage runs made earlier, found here, instead of new ones
    round: str = DEFAULT_ROUND  # the MLPerf round: its rules, layout, seeds and checker

    @property
    def runs_root(self) -> Path:
        return self.out_dir / "runs"

    @property
    def tree(self) -> Path:
        return self.out_dir / "tree"


@dataclass(frozen=True)
class BenchmarkPlan:
    benchmark: Benchmark
    rules: ModelRules
    scenarios: tuple[ScenarioSteps, ...]


@dataclass
class Outcome:
    """What the submission did, for the summary."""

    system: str
    runs: list[ScenarioRuns] = field(default_factory=list)


def plan_benchmarks(request: SubmissionRequest, runs_root: Path) -> list[BenchmarkPlan]:
    table = get_round(request.round)
    plans = []
    for name in request.benchmarks:
        benchmark = load_benchmark(name)
        model = submission_model(benchmark, request.run_args)
        if model is None:
            raise HarnessError(f"{name} is not an MLPerf benchmark: it cannot be submitted")
        if model not in table.models:
            raise HarnessError(
                f"{model} is no model of {table.name} (MLCommons' {table.name} checker lists"
                f" {', '.join(table.models)} of ours)"
            )
        rules = table.models[model]
        for test in rules.audits:
            check_runnable(test, f"{model} in {table.name}")
        allowed = rules.allowed_scenarios(request.system_type)
        required = rules.required_scenarios(request.system_type)
        scenarios = request.scenarios or required
        for scenario in scenarios:
            if scenario not in allowed:
                names = ", ".join(s.value for s in allowed)
                raise HarnessError(
                    f"{rules.model} on a {request.system_type!r} system has no {scenario.value}"
                    f" scenario (it has {names})"
                )
        missing = [s.value for s in required if s not in scenarios]
        if missing:
            print(
                f"submission: note: the checker requires {', '.join(missing)} of {rules.model} on"
                f" a {request.system_type!r} system; this submission leaves them out",
                file=sys.stderr,
            )
        plans.append(
            BenchmarkPlan(
                benchmark,
                rules,
                tuple(
                    scenario_steps(runs_root, name, scenario, rules.audits)
                    for scenario in scenarios
                ),
            )
        )
    return plans


class SubmissionRunner:
    def __init__(self, request: SubmissionRequest) -> None:
        self.request = request
        self.records = resume.StepRecords(request.runs_root)
        self.plans = plan_benchmarks(request, request.runs_root)
        self._system_flag: list[str] = []
        first = self.plans[0].benchmark
        # Every run of the submission under one system name (each would detect the same).
        self.system = resolve_settings(first, self._options(first, []))[0]
        if not any(arg.startswith("--system_name") for arg in request.run_args):
            self._system_flag = ["--system_name", self.system]
        steps = sum(len(s.ordered()) for plan in self.plans for s in plan.scenarios)
        self.progress = ProgressLine(total=steps)

    # The runs --------------------------------------------------------------------------------
    def _argv(self, extra: Sequence[str]) -> list[str]:
        argv = [*self.request.run_args, *extra]
        if self.request.fast:
            argv.append("--fast")
        if self.request.round != DEFAULT_ROUND:  # v6.1's runs keep the arguments they had
            argv += ["--round", self.request.round]
        return argv + self._system_flag

    def _options(self, benchmark: Benchmark, extra: Sequence[str]) -> RunOptions:
        return benchmark.parse_options(self._argv(extra))

    def _configured_seconds(self, benchmark: Benchmark, options: RunOptions) -> float | None:
        """The run's minimum duration as its settings stand before preparation (a stand-in's
        shorter run told from what is on disk)."""
        if options.test_mode.checks_accuracy:
            return None  # as long as the dataset takes: known once one has run
        layered = layer_settings(
            benchmark, options, lambda _settings: benchmark.expects_stand_in(options), log_dir=False
        )
        effective = to_test_settings(layered.loadgen_flags, layered.loadgen_defaults)
        return float(effective.min_duration_ms) / 1000.0

    def _left_seconds(self, remaining: Sequence[tuple[RunStep, float | None]]) -> float | None:
        total = 0.0
        for step, configured in remaining:
            estimate = self.progress.estimate(step.kind, configured)
            if estimate is None:
                return None
            total += estimate
        return total

    def run_step(
        self,
        benchmark: Benchmark,
        step: RunStep,
        configured: float | None,
        left_s: float | None,
    ) -> None:
        """`configured`: the run's configured duration (see _configured_seconds)."""
        argv = step.run_arguments()
        options = self._options(benchmark, argv)
        wanted = resume.run_fingerprint(
            self._argv(argv), show_config(benchmark, options), benchmark.input_files(options)
        )
        if self.records.finished(step.step_id, wanted) and (step.out_dir / RESULT_FILE).is_file():
            self.progress.skipped(step.title)
            return
        self.records.forget(step.step_id)
        self.progress.start(step.title, self.progress.estimate(step.kind, configured), left_s)
        partial = step.out_dir.with_name(step.out_dir.name + _PARTIAL)
        shutil.rmtree(partial, ignore_errors=True)
        started = time.monotonic()
        run_in_child(benchmark.name, self._argv([*argv, "--log_dir", str(partial)]), step.title)
        _replace_dir(partial, step.out_dir)
        wall = time.monotonic() - started
        self.records.mark_finished(step.step_id, wanted, wall)
        self.progress.finished(step.kind, wall)
        result = result_record(step.out_dir)
        valid = result.get("result_valid")
        verdict = "VALID" if valid is True else "INVALID" if valid is False else "done"
        accuracy = f", {result['accuracy']['line']}" if result.get("accuracy") else ""
        print(f"    {verdict}{accuracy} ({wall:.0f} s) -> {step.out_dir}", file=sys.stderr)

    def verify_step(self, benchmark: Benchmark, steps: ScenarioSteps, step: RunStep) -> None:
        assert step.audit is not None
        audit_run = steps.audit_runs[step.audit]
        inputs = [steps.performance, steps.accuracy, audit_run]
        # The runs' own records, not their inputs: a run that was redone is a new run to compare.
        wanted = resume.fingerprint(
            [step.step_id, resume.harness_code_digest()]
            + [resume.file_digest(run.out_dir / RESULT_FILE) for run in inputs]
        )
        if self.records.finished(step.step_id, wanted) is not None and step.out_dir.is_dir():
            self.progress.skipped(step.title)
            return
        self.records.forget(step.step_id)
        self.progress.start(step.title, None, None)
        verdict = verify_benchmark_audit(
            benchmark,
            self._options(benchmark, steps.accuracy.run_arguments()),
            step.audit,
            audit_run=audit_run.out_dir,
            performance_run=steps.performance.out_dir,
            accuracy_run=steps.accuracy.out_dir,
            out_dir=step.out_dir,
        )
        self.records.mark_finished(step.step_id, wanted, 0.0)
        result = "PASS" if verdict.passed else "FAIL: " + "; ".join(verdict.reasons)
        print(f"    {step.audit.value} {result}", file=sys.stderr)

    def run_all(self) -> Outcome:
        outcome = Outcome(self.system)
        pending: list[tuple[Benchmark, ScenarioSteps, RunStep, float | None]] = []
        for plan in self.plans:
            for steps in plan.scenarios:
                for step in steps.ordered():
                    configured = None
                    if step.kind is not StepKind.VERIFY:
                        options = self._options(plan.benchmark, step.run_arguments())
                        configured = self._configured_seconds(plan.benchmark, options)
                    pending.append((plan.benchmark, steps, step, configured))
        for index, (benchmark, steps, step, configured) in enumerate(pending):
            if step.kind is StepKind.VERIFY:
                self.verify_step(benchmark, steps, step)
                continue
            left = self._left_seconds([(s, c) for _b, _ss, s, c in pending[index:]])
            self.run_step(benchmark, step, configured, left)
        for plan in self.plans:
            for steps in plan.scenarios:
                outcome.runs.append(
                    ScenarioRuns(
                        system=self.system,
                        model=plan.rules.model,
                        benchmark=steps.benchmark,
                        scenario=steps.scenario,
                        performance_dir=steps.performance.out_dir,
                        accuracy_dir=steps.accuracy.out_dir,
                        audit_dirs={t: v.out_dir for t, v in steps.verifications.items()},
                    )
                )
        return outcome


def _replace_dir(new: Path, final: Path) -> None:
    """Move a finished run into place; an older run there is removed only after the move."""
    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def run_submission(request: SubmissionRequest) -> int:
    """Everything, in order; the exit status: 0 when the tree passed the preflight check (problems
    inherent to short or stand-in runs allowed where the runs were short or stand-in), else 1."""
    if request.stage_runs:
        plans = plan_benchmarks(request, request.runs_root)
        wanted = {plan.benchmark: [steps.scenario for steps in plan.scenarios] for plan in plans}
        system, runs = select_existing_runs(
            request.stage_runs,
            wanted,
            request.run_args,
            request.out_dir,
            allow_invalid=request.allow_invalid,
            round_name=request.round,
        )
        outcome = Outcome(system, runs)
    else:
        runner = SubmissionRunner(request)
        outcome = runner.run_all()
        plans = runner.plans
    results = [result_record(runs.performance_dir) for runs in outcome.runs]
    stand_in = any(result.get("stand_in") for result in results)
    short_runs = stand_in or request.fast
    notes = []
    allow_invalid = request.allow_invalid or stand_in
    if stand_in:
        notes.append(f"{STAND_IN_NOTICE}: staged with INVALID runs and failed checks allowed")
    first = plans[0].benchmark
    description = describe_this_system(
        outcome.system,
        division=request.division,
        submitter=request.submitter,
        backends=sorted({str(result.get("backend", "")) for result in results} - {""}),
        status=request.status,
        system_type=request.system_type,
        config_dir=first.parse_options(list(request.run_args)).config_dir,
        overrides_file=request.system_description,
    )
    print("submission: staging, truncating the accuracy logs", file=sys.stderr)
    # The full logs go beside the tree under the same relative paths, before they are truncated.
    full_logs = request.full_results_dir
    stage(
        outcome.runs,
        request.tree,
        division=request.division,
        submitter=request.submitter,
        system_descriptions={outcome.system: description},
        allow_invalid=allow_invalid,
        before_commit=lambda staged: _truncate(staged, full_logs),
        round_name=request.round,
    )
    print(f"submission: checking the tree by {request.round}'s rules", file=sys.stderr)
    problems = check_tree(request.tree, full_logs=full_logs, round_name=request.round)
    if request.inference_src is not None:
        python = request.checker_python or sys.executable
        for run in run_mlcommons_checker(
            request.tree, request.inference_src, python=python, round_name=request.round
        ):
            problems += checker_problems(run)
    counted = [p for p in problems if not _expected(p, short_runs=short_runs, stand_in=stand_in)]
    for problem in problems:
        expected = _expected(problem, short_runs=short_runs, stand_in=stand_in)
        print(f"  {problem.line()}{' (expected here)' if expected else ''}", file=sys.stderr)
    tarball, sha1 = pack(request.tree, request.out_dir, request.submitter)
    notes.append(
        f"preflight check: {len(problems)} problem(s), {len(problems) - len(counted)} of them"
        " expected of short runs (durations, query counts, early stopping, dataset size, audit"
        " performance) or of stand-in runs (INVALID latency-bound runs on a CPU, or Server's bound"
        " widened where the CPU cannot meet it; accuracy judged against the stand-in's own, not"
        " the official target)"
        if problems
        else "preflight check: no problems"
    )
    notes.append(f"tarball: {tarball} (sha1 in {sha1.name})")
    markdown = write_summary(
        outcome.runs,
        request.out_dir,
        f"MLPerf Inference {request.round} submission of {request.submitter} ({request.division},"
        f" {outcome.system}, {request.system_type})",
        notes,
        round_name=request.round,
    )
    report = request.out_dir / "report.html"
    # The runs, not the tree: they keep what staging leaves out (the timeline, every setting).
    write_submission_report(
        list(request.stage_runs) or [request.runs_root],
        report,
        title=f"{request.submitter}: {request.round} submission",
    )
    print(markdown, end="")
    print(
        f"submission: tree {request.tree}, summary {request.out_dir / 'summary.md'}, report {report}"
    )
    return 1 if counted else 0


def _expected(problem: Problem, *, short_runs: bool, stand_in: bool) -> bool:
    """Problems a run of this kind cannot avoid: short runs (--fast, stand-in) miss the round's
    durations and query counts; a stand-in on a CPU misses latency bounds and so is INVALID, or
    runs Server under a bound widened to what the CPU can meet (docs/rates.md), and is judged
    against its own measured accuracy (result.json), not the official model's target (the
    3D-UNet stand-in's DICE 0.76 is below 3D-UNet-99's 0.853). An error MLCommons' checker logs
    from a known defect of its own (the round's table names it) never counts against the tree."""
    if problem.kind is Kind.CHECKER_DEFECT or (short_runs and problem.short_run):
        return True
    return stand_in and problem.kind in (Kind.VALIDITY, Kind.ACCURACY, Kind.LATENCY_BOUND)


def _truncate(staged_root: Path, full_logs: Path) -> None:
    truncate_accuracy_logs(staged_root, full_logs)
