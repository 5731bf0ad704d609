"""The rules every round shares, and the current round's (v6.1) under their short names.

Each round's facts are one table in submission/rounds/ (v6.1's is rounds/v6_1.py): what is here
for v6.1 is read from that table, never written a second time. Code that stages or checks for a
chosen round takes its table (`rounds.get_round(name)`); what only ever concerns the current round
(a benchmark's default audits, the report's metrics) may use the names below.
"""

from __future__ import annotations

from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.rounds import DEFAULT_ROUND, ROUNDS
from mlperf_harness.submission.rounds.facts import AuditTest, ModelRules

__all__ = [
    "DIVISIONS",
    "METRIC_KEYS",
    "MIN_DURATION_MS",
    "MODELS",
    "ROUND",
    "SEEDS",
    "STATUSES",
    "SYSTEM_TYPES",
    "TEST01_ACCURACY_LOG_RNG_SEED",
    "AuditTest",
    "ModelRules",
    "model_rules",
]

# The same in every round read (VALID_DIVISIONS, VALID_AVAILABILITIES; system types in set_type).
SYSTEM_TYPES = ("datacenter", "edge", "datacenter,edge")
STATUSES = ("available", "preview", "rdi")
DIVISIONS = ("closed", "open")

_CURRENT = ROUNDS[DEFAULT_ROUND]
ROUND = _CURRENT.name
SEEDS = _CURRENT.seeds
MIN_DURATION_MS = _CURRENT.min_duration_ms
TEST01_ACCURACY_LOG_RNG_SEED = _CURRENT.test01_accuracy_log_rng_seed
# Each scenario's metric as the checker reads it from the detail log: rates for Offline and Server,
# early-stopping latencies (ns) for SingleStream (its p90) and MultiStream (its p99).
METRIC_KEYS = _CURRENT.metric_keys
MODELS = _CURRENT.models


def model_rules(model: str, round_name: str = DEFAULT_ROUND) -> ModelRules:
    """One model's rules in a round (the current one by default)."""
    table = ROUNDS.get(round_name)
    if table is None:
        raise HarnessError(f"unknown round {round_name!r}: choose one of {', '.join(ROUNDS)}")
    return table.model(model)
