"""What a run's round (`--round`, default v6.1) changes in the run itself.

- Which audits the run may be: the round's for the benchmark's submission model (v4.0 adds TEST05
  to every model with TEST01), each refused in one line where the harness does not run it yet.
- LoadGen's seeds: the LoadGen we pin carries v6.1's in its built-in mlperf.conf; a run for a
  round whose checker compares other seeds sets that round's (and for TEST05, TEST05's) in
  TestSettings, and its user.conf and result.json record them.
- A benchmark whose model the round does not list cannot run for it.
"""

from __future__ import annotations

import dataclasses
import functools

import mlperf_loadgen as lg

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import LoadgenSettings, RoundSeeds
from mlperf_harness.submission.rounds import DEFAULT_ROUND, get_round
from mlperf_harness.submission.rounds.facts import AuditTest, ModelRules, check_runnable

_SEED_NAMES = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")


def round_rules(benchmark: Benchmark, options: RunOptions) -> ModelRules | None:
    """The round's rules for this run's submission model; None for a benchmark no submission
    holds. A model the round does not list is refused in one line."""
    model = benchmark.submission_model_for(options.config_ver)
    if model is None:
        return None
    table = get_round(options.round)
    if model not in table.models:
        rounds = "" if table.name == DEFAULT_ROUND else f" (--round {table.name})"
        raise HarnessError(
            f"{benchmark.name} runs as {model}, which MLCommons' {table.name} checker does not"
            f" list{rounds}: its models are {', '.join(table.models)}"
        )
    return table.models[model]


def run_audits(benchmark: Benchmark, options: RunOptions) -> tuple[AuditTest, ...]:
    """The audits a run of this benchmark may be in its round; an audit the round asks for that
    the harness does not run yet is refused here, in one line, when the run asks for it."""
    rules = round_rules(benchmark, options)
    audits = benchmark.audit_tests if rules is None else rules.audits
    test = options.audit_test
    if test is not None and test in audits:
        check_runnable(test, f"{benchmark.name} in {options.round}")
    return audits


@functools.cache
def builtin_seeds() -> tuple[int, int, int]:
    """The seeds of the pinned LoadGen's built-in mlperf.conf (the same for every model)."""
    settings = lg.TestSettings()
    if settings.FromConfig("", "resnet50", "Offline", 0) != 0:
        raise HarnessError("LoadGen could not apply its built-in mlperf.conf")
    return tuple(int(getattr(settings, name)) for name in _SEED_NAMES)  # type: ignore[return-value]


def round_seeds(round_name: str, audit: AuditTest | None) -> RoundSeeds | None:
    """The seeds a run for this round sets over mlperf.conf's; None where mlperf.conf's are the
    round's already (v6.1 with LoadGen 6.0.17) and the run is no TEST05."""
    table = get_round(round_name)
    test05 = None
    if audit is AuditTest.TEST05:
        if table.test05_seeds is None:
            raise HarnessError(f"{table.name} has no TEST05 (its checker compares no TEST05 seeds)")
        test05 = table.test05_seeds
    seeds = RoundSeeds.of(table.seeds, test05)
    if (
        test05 is None
        and (
            seeds.qsl_rng_seed,
            seeds.sample_index_rng_seed,
            seeds.schedule_rng_seed,
        )
        == builtin_seeds()
    ):
        return None
    return seeds


def with_round_seeds(
    settings: LoadgenSettings, round_name: str, audit: AuditTest | None
) -> LoadgenSettings:
    """`settings` (the command line's LoadGen layer, the top one) with the round's seeds."""
    seeds = round_seeds(round_name, audit)
    return settings if seeds is None else dataclasses.replace(settings, seeds=seeds)
