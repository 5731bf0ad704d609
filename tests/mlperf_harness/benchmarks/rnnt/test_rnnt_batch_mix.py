"""rnnt.batch_mix, the per-call cost against batch size and length mix: the three mixes' batches
(drawn at random, from one length share at a time, Offline's length order), the table, and the tool
end to end on the stand-in's ONNX Runtime runner (slow: it builds the stand-in)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.benchmarks.rnnt.batch_mix import MIXES, main, mix_batches, table
from mlperf_harness.benchmarks.rnnt.real_size import main as real_size_main
from mlperf_harness.benchmarks.rnnt.stand_in import ensure_stand_in
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import length_buckets

LENGTHS = np.arange(100, 140, dtype=np.int64)[np.random.default_rng(5).permutation(40)]
INDICES = list(range(40))


def _take(mix: str, batch: int, count: int, buckets: int = 4) -> list[list[int]]:
    return list(itertools.islice(mix_batches(mix, INDICES, LENGTHS, batch, buckets), count))


def test_arrival_batches_are_seeded_random_draws_of_the_loaded_samples() -> None:
    drawn = _take("arrival", 8, 5)
    assert all(len(b) == 8 and set(b) <= set(INDICES) for b in drawn)
    assert drawn == _take("arrival", 8, 5)  # the same on every machine
    assert len({tuple(b) for b in drawn}) > 1


def test_bucket_batches_take_one_length_share_at_a_time_in_turn() -> None:
    shares = length_buckets(LENGTHS, 4)
    drawn = _take("buckets", 6, 8)
    taken = [{int(shares[i]) for i in batch} for batch in drawn]
    assert taken == [{0}, {1}, {2}, {3}] * 2


def test_length_batches_are_offlines_length_ordered_cuts() -> None:
    drawn = _take("length", 8, 5)
    # Each batch a run of consecutive lengths of the sorted query (40 samples: 5 batches of 8).
    assert sorted(int(LENGTHS[b].max() - LENGTHS[b].min()) for b in drawn) == [7] * 5
    assert sorted(i for b in drawn for i in b) == INDICES


def test_an_unknown_mix_is_one_line() -> None:
    with pytest.raises(HarnessError, match="one of"):
        next(mix_batches("random", INDICES, LENGTHS, 4, 2))


def test_table_compares_each_mix_with_length_order() -> None:
    def row(mix: str, rate: float) -> dict[str, object]:
        return {
            "batch_size": 16,
            "mix": mix,
            "calls": 3,
            "latency_ms": {"p50": 1.0},
            "samples_per_second": rate,
            "longest_frames": 150.0,
            "mean_frames": 100.0,
        }

    record = {
        "backend": "onnxruntime",
        "buckets": 4,
        "rows": [row("arrival", 30.0), row("length", 40.0)],
    }
    lines = table(record)
    assert lines[2] == "| 16 | arrival | 3 | 1.0 | 30.0 | 0.75 | 1.50 |"
    assert lines[3] == "| 16 | length | 3 | 1.0 | 40.0 | 1.00 | 1.50 |"


@pytest.mark.slow
def test_the_tool_times_the_stand_ins_runner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ensure_stand_in(tmp_path, progress=False)
    out = tmp_path / "mix.json"
    argv = ["--batches", "2", "4", "--seconds", "0.01", "--buckets", "2", "--out", str(out)]
    assert main([*argv, "--scratch_path", str(tmp_path)]) == 0
    record = json.loads(out.read_text())
    assert record["backend"] == "onnxruntime" and record["buckets"] == 2
    assert [(r["batch_size"], r["mix"]) for r in record["rows"]] == [
        (batch, mix) for batch in (2, 4) for mix in MIXES
    ]
    for entry in record["rows"]:
        assert entry["calls"] >= 3 and entry["samples_per_second"] > 0
        assert entry["longest_frames"] >= entry["mean_frames"] > 0
    assert "| 4 | buckets |" in capsys.readouterr().out


def test_the_null_backend_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert real_size_main(["--out", str(tmp_path), "--samples", "8"]) == 0
    argv = ["--backend", "null", "--model_path", str(tmp_path), "--scratch_path", str(tmp_path)]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "rnnt.batch_mix: error: rnnt.batch_mix measures the onnxruntime or torch backend, this "
        "run resolved null"
    )
    assert not any("error" in line for line in err[:-1])
