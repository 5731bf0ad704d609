"""Which runs answer their latency queries in C++ (harness/round_trip_choice.py): only where every
piece allows it; asked for where it cannot apply, one line saying why."""

from __future__ import annotations

from typing import Any

import pytest

from mlperf_harness import native
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.round_trip_choice import choose_round_trips
from mlperf_harness.loadgen.paths import NATIVE, PYTHON


class RunnerWithRoundTrips(NullRunner):
    """A runner that has round trips to launch (as the torch runner on GPU samples has)."""

    name = "with-round-trips"

    def __init__(self) -> None:
        super().__init__()
        self.offsets: list[int] = []

    def inline_round_trips(self, label_offset: int) -> native.InlineRoundTrips:
        self.offsets.append(label_offset)
        return native.InlineRoundTrips(label_offset)


def choose(runners: list[Any], wanted: bool | None = None, **changes: Any) -> Any:
    arguments: dict[str, Any] = {
        "wanted": wanted,
        "inline": True,
        "loadgen_path": NATIVE,
        "label_offset": 1,
        "whole_responses": True,
    }
    return choose_round_trips(runners, **{**arguments, **changes})


def test_chosen_where_every_piece_allows_it() -> None:
    runner = RunnerWithRoundTrips()
    for wanted in (None, True):
        assert isinstance(choose([runner], wanted), native.InlineRoundTrips)
    assert runner.offsets == [1, 1]
    # A runner per GPU: the first answers, as HarnessSUT runs inline queries on it.
    second = RunnerWithRoundTrips()
    assert choose([runner, second]) is not None
    assert runner.offsets == [1, 1, 1] and second.offsets == []


@pytest.mark.parametrize(
    ("runners", "changes", "why"),
    [
        ("with", {"loadgen_path": PYTHON}, "it needs the native LoadGen"),
        ("with", {"label_offset": None}, "this run's responses need the benchmark's postprocess"),
        (
            "with",
            {"whole_responses": False},
            "this run's responses need the benchmark's postprocess",
        ),
        ("null", {}, "the null runner has no round trips to launch"),
    ],
)
def test_where_a_piece_does_not_allow_it(runners: str, changes: dict[str, Any], why: str) -> None:
    made: dict[str, list[Any]] = {
        "with": [RunnerWithRoundTrips()],
        "null": [NullRunner()],
    }
    chosen = made[runners]
    assert choose(chosen, None, **changes) is None  # by default: Python answers, quietly
    with pytest.raises(HarnessError, match=f"native_round_trips cannot apply: {why}"):
        choose(chosen, True, **changes)


def test_turned_off_or_not_inline_it_is_never_asked_for() -> None:
    runner = RunnerWithRoundTrips()
    assert choose([runner], False) is None
    assert choose([runner], None, inline=False) is None
    assert runner.offsets == []
