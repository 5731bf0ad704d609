"""harness/timeline.py: percentiles from the histogram, the JSON file and its errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.timeline import (
    FORMAT,
    TIMELINE_FILE,
    LatencyBucket,
    Timeline,
    read_timeline,
)


def _timeline(buckets: list[tuple[int, int, int]]) -> Timeline:
    count = sum(n for _, _, n in buckets)
    return Timeline(
        bin_width_ns=1_000_000,
        issued=(count,),
        completed=(count,),
        batches=(1,),
        latency_mean_ns=(1.0,),
        latency_max_ns=(max(lo + w for lo, w, _ in buckets),),
        histogram=tuple(LatencyBucket(*b) for b in buckets),
        issued_samples=count,
        completed_samples=count,
        completed_batches=1,
        latency_min_ns=buckets[0][0],
        latency_max_total_ns=max(lo + w for lo, w, _ in buckets),
        latency_mean_total_ns=1.0,
        duration_ns=5,
    )


def test_percentiles_pick_loadgens_rank_within_its_bucket() -> None:
    # 100 samples: 90 in [1000, 1010), 10 in [5000, 5100).
    timeline = _timeline([(1000, 10, 90), (5000, 100, 10)])
    assert 1000 <= timeline.percentile_ns(0.5) < 1010
    assert 5000 <= timeline.percentile_ns(0.9) < 5100  # rank 90: the first of the slow ten
    assert 5000 <= timeline.percentile_ns(0.999) < 5100
    assert timeline.percentile_ns(0.0) == pytest.approx(1000 + 10 * 0.5 / 90)


def test_no_samples_no_percentiles() -> None:
    empty = Timeline(1, (), (), (), (), (), (), 0, 0, 0, 0, 0, 0.0, 0)
    assert empty.percentiles_ns() == {}
    with pytest.raises(HarnessError, match="no completed samples"):
        empty.percentile_ns(0.5)


@pytest.mark.parametrize("first_issue_ns", [None, 123_456_789])
def test_json_round_trip(tmp_path: Path, first_issue_ns: int | None) -> None:
    """With the first issue's time and without it (files written before it was kept)."""
    timeline = dataclasses.replace(
        _timeline([(1000, 10, 90), (5000, 100, 10)]), first_issue_ns=first_issue_ns
    )
    path = tmp_path / TIMELINE_FILE
    path.write_text(json.dumps(timeline.to_json()))
    assert read_timeline(path) == timeline
    assert json.loads(path.read_text())["format"] == FORMAT


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ('{"format": "something else"}', "is not a harness timeline"),
        (json.dumps({"format": FORMAT, "bins": {}}), "is malformed"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / TIMELINE_FILE
    path.write_text(content)
    with pytest.raises(HarnessError, match=message):
        read_timeline(path)
