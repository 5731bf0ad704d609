"""Compliance audit runs: the audit.config each test hands LoadGen.

LoadGen overrides a run's TestSettings from an audit.config file. Its Python binding defaults the
file to `audit.config` in the process's working directory, so a stray file there would silently turn
a normal run into an audit run: `loadgen.run.run_test` always names the file explicitly instead (an
audit run's own config in its log directory, or a path that cannot exist for a normal run).

TEST05 (v4.0: the performance run again under other seeds) sets `test05 = 1` in MLCommons'
audit.config, a key LoadGen 6.0.17 reads only from its built-in mlperf.conf: the run sets
TestSettings.test05 and the round's TEST05 seeds itself (round_run.round_seeds); the key is written
here all the same, so that the file says what the audit is.
"""

from __future__ import annotations

from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.rounds.facts import check_runnable
from mlperf_harness.submission.rules import TEST01_ACCURACY_LOG_RNG_SEED, AuditTest

AUDIT_CONFIG_FILE = "audit.config"
TEST06_SAMPLES_LOGGED = 100  # MLCommons' TEST06/audit.config: sampling target and query count
_PERFORMANCE_MODE = 2  # LoadGen's TestMode numbering in config files: 2 = PerformanceOnly


def audit_settings(test: AuditTest, accuracy_log_sampling_target: int | None) -> dict[str, int]:
    """The TestSettings keys an audit overrides, as MLCommons' compliance/TEST0x/audit.config set them.
    `accuracy_log_sampling_target`: TEST01's, from the round's table (None where it has no TEST01)."""
    if test is AuditTest.TEST01:
        if accuracy_log_sampling_target is None:
            raise HarnessError(
                "TEST01 needs the model's accuracy_log_sampling_target: none is known"
            )
        # A performance run that also logs a random subset of responses, to compare with the
        # accuracy run's: the SUT must answer the same in both modes.
        return {
            "mode": _PERFORMANCE_MODE,
            "accuracy_log_rng_seed": TEST01_ACCURACY_LOG_RNG_SEED,
            "accuracy_log_sampling_target": accuracy_log_sampling_target,
        }
    if test is AuditTest.TEST04:
        # The same sample every time: a SUT that caches results would run much faster.
        return {
            "mode": _PERFORMANCE_MODE,
            "performance_issue_unique": 0,
            "performance_issue_same": 1,
            "performance_issue_same_index": 3,
        }
    if test is AuditTest.TEST05:
        # Other seeds: the performance must not depend on the round's own (v4.0).
        return {"mode": _PERFORMANCE_MODE, "test05": 1}
    if test is AuditTest.TEST06:
        # An LLM's generated tokens, 100 samples logged from a short performance run, equal
        # issue off: their first token, EOS and token count are checked (verify_test06.py). The
        # run itself also records token latencies, so that LoadGen logs each response's first
        # token and count (plan_run: use_token_latencies).
        return {
            "mode": _PERFORMANCE_MODE,
            "accuracy_log_rng_seed": TEST01_ACCURACY_LOG_RNG_SEED,
            "accuracy_log_sampling_target": TEST06_SAMPLES_LOGGED,
            "min_query_count": TEST06_SAMPLES_LOGGED,
            "min_duration": 0,
            "sample_concatenate_permutation": 0,
        }
    check_runnable(test, "this run")
    raise HarnessError(f"{test.value} is not supported by this harness")


def audit_config_text(test: AuditTest, accuracy_log_sampling_target: int | None) -> str:
    """audit.config for every model and scenario (LoadGen looks its keys up as `*.<scenario>.key`)."""
    settings = audit_settings(test, accuracy_log_sampling_target)
    lines = [f"# {test.value}, written by the harness and handed to LoadGen by path"]
    lines += [f"*.*.{key} = {value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"
