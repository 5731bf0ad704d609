"""Verifying one benchmark's audit run: verify.py's rules with the benchmark's response type,
metric and allowed accuracy difference filled in, as the runs' flags make them (--output_dtype,
--config_ver, --round: TEST05's seeds). The submission pipeline verifies its own audit runs this way, and `--stage_runs`
the audit runs it finds unverified."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.rounds import get_round
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.submission.verify import AuditVerdict, verify_audit
from mlperf_harness.submission.verify_test06 import verify_test06


def verify_benchmark_audit(
    benchmark: Benchmark,
    options: RunOptions,
    test: AuditTest,
    *,
    audit_run: Path,
    performance_run: Path,
    accuracy_run: Path,
    out_dir: Path,
) -> AuditVerdict:
    """`options`: an accuracy run's, which name the data TEST01's rescoring reads, the logged
    response type and the submission model."""
    if test is AuditTest.TEST06:
        eos_id = benchmark.eos_token_id(options)
        if eos_id is None:
            raise HarnessError(f"{benchmark.name} generates no tokens: TEST06 does not apply")
        return verify_test06(audit_run, out_dir, benchmark.response_dtype_for(options), eos_id)
    model = benchmark.submission_model_for(options.config_ver)
    table = get_round(options.round)  # the runs' round: its TEST05 seeds, its delta
    return verify_audit(
        test,
        audit_run=audit_run,
        reference_run=performance_run,
        accuracy_run=accuracy_run,
        out_dir=out_dir,
        dtype=benchmark.response_dtype_for(options),
        score=_scorer(benchmark, options),
        accuracy_fraction_delta=table.model(str(model)).test01_accuracy_delta_percent,
        test05_seeds=table.test05_seeds if test is AuditTest.TEST05 else None,
    )


def submission_model(benchmark: Benchmark, run_args: Sequence[str]) -> str | None:
    """The results/ name of the benchmark's runs made with these flags (--config_ver chooses:
    bert-99 or bert-99.9); None for a benchmark that cannot be submitted."""
    return benchmark.submission_model_for(benchmark.parse_options(run_args).config_ver)


def _scorer(benchmark: Benchmark, options: RunOptions) -> Callable[[Path], float]:
    def score(accuracy_log: Path) -> float:
        value = benchmark.score_accuracy_log(accuracy_log, options)
        if value is None:
            raise HarnessError(f"{benchmark.name} has no accuracy metric to score {accuracy_log}")
        return value

    return score
