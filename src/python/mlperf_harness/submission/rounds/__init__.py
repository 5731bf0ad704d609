"""Each MLPerf Inference round this harness can stage for, as one table of facts read from that
round's MLCommons checker (facts.py says what a table holds; v*.py are the tables, each fact with
where it was read). v6.1 is the current round and the default; the others are the last rounds of
the benchmarks v6.1 retired: RetinaNet (v6.0), DLRM-v2 (v5.1), GPT-J (v5.0), RNN-T (v4.0)."""

from __future__ import annotations

from types import MappingProxyType

from mlperf_harness.errors import HarnessError
from mlperf_harness.submission.rounds import v4_0, v5_0, v5_1, v6_0, v6_1
from mlperf_harness.submission.rounds.facts import Round

ROUNDS = MappingProxyType(
    {table.name: table for table in (v6_1.ROUND, v6_0.ROUND, v5_1.ROUND, v5_0.ROUND, v4_0.ROUND)}
)
DEFAULT_ROUND = v6_1.NAME
ROUND_NAMES = tuple(ROUNDS)


def get_round(name: str) -> Round:
    try:
        return ROUNDS[name]
    except KeyError:
        raise HarnessError(
            f"unknown round {name!r}: choose one of {', '.join(ROUND_NAMES)}"
        ) from None


def parse_round(text: str) -> str:
    """A --round value: 'v6.0' (or '6.0')."""
    name = text.strip()
    if name and not name.startswith("v"):
        name = "v" + name
    return get_round(name).name


def recorded_round(record: dict[str, object]) -> str:
    """The round a run was made for, from its result.json: runs from before rounds were recorded
    were made for the only round there was, v6.1."""
    value = record.get("round")
    return value if isinstance(value, str) and value else DEFAULT_ROUND


def newest_round_listing(*models: str | None) -> str:
    """The newest round whose checker lists every one of `models` (a run's default --round, and a
    submission's); the current round where none lists them all (a benchmark no submission holds,
    or benchmarks of rounds apart, which the submission's preflight then names)."""
    for table in ROUNDS.values():  # newest first
        if all(model in table.models for model in models):
            return table.name
    return DEFAULT_ROUND
