"""DLRM-v2's preprocessing of day 23: the raw day file and MLCommons' materialized files give the
set the run reads (first half, samples of user groups); it resumes after an interruption; a
truncated file or an index beyond its table is one line and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from criteo_samples import write_materialized, write_raw_day

from mlperf_harness.benchmarks.dlrm_v2.stand_in import features
from mlperf_harness.benchmarks.dlrm_v2.stand_in_data import GROUP_SIZE_QUANTILES, STAND_IN_ROWS
from mlperf_harness.benchmarks.dlrm_v2.topology import bag_offsets
from mlperf_harness.datasets.criteo import preprocess
from mlperf_harness.datasets.criteo.preprocess import first_half, preprocess_day
from mlperf_harness.datasets.criteo.store import check_indices, load_preprocessed
from mlperf_harness.errors import HarnessError

ROWS = 2_001  # an odd count: the first half is ceil(rows / 2) = 1,001 pairs


def _nothing_left(parent: Path) -> None:
    assert sorted(p.name for p in parent.iterdir()) == []


def test_raw_day_file_becomes_the_first_half_made_multi_hot(tmp_path: Path) -> None:
    raw = write_raw_day(tmp_path / "criteo", ROWS)
    out = tmp_path / "out" / "day_23"
    report = preprocess_day(tmp_path / "criteo", out, table_rows=STAND_IN_ROWS, expected_rows=None,
                            chunk_pairs=300, progress=False)  # fmt: skip
    dataset = load_preprocessed(out)
    half = first_half(ROWS)
    assert report.pairs == dataset.manifest.pairs == half == 1_001
    dense, sparse = features(raw)
    assert np.array_equal(dataset.sparse, sparse[:half])
    assert np.allclose(dataset.dense, dense[:half])
    assert np.array_equal(dataset.labels, raw.labels[:half])
    sizes = np.diff(dataset.groups)
    assert set(sizes[:-1].tolist()) <= set(GROUP_SIZE_QUANTILES) and sizes.sum() == half
    # Kept when whole: a second call reads it back.
    assert preprocess_day(tmp_path / "criteo", out, table_rows=STAND_IN_ROWS).chunks == 0


def test_materialized_files_are_taken_as_they_are_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = write_materialized(tmp_path / "criteo", ROWS)
    out = tmp_path / "out" / "day_23"
    original = check_indices
    calls = []

    def interrupt_on_third(*args: object) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(preprocess, "check_indices", interrupt_on_third)
    with pytest.raises(KeyboardInterrupt):
        preprocess_day(tmp_path / "criteo", out, table_rows=STAND_IN_ROWS, expected_rows=None,
                       chunk_pairs=250, progress=False)  # fmt: skip
    assert not out.exists()  # interrupted: no set, the chunks done are kept for the next run
    monkeypatch.setattr(preprocess, "check_indices", original)
    report = preprocess_day(tmp_path / "criteo", out, table_rows=STAND_IN_ROWS,
                            expected_rows=None, chunk_pairs=250, progress=False)  # fmt: skip
    assert (report.chunks, report.resumed_chunks) == (5, 2)
    dataset = load_preprocessed(out)
    _, sparse = features(raw)
    assert np.array_equal(dataset.sparse, sparse[: first_half(ROWS)])
    assert sorted(p.name for p in out.parent.iterdir()) == ["day_23"]


def test_truncated_day_file_is_one_line(tmp_path: Path) -> None:
    write_raw_day(tmp_path / "criteo", 600)
    day = tmp_path / "criteo" / "day_23"
    text = day.read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    day.write_bytes(text[: text.index(b"\n", len(text) // 2) + 40])  # cut in a line
    with pytest.raises(
        HarnessError, match=r"day_23 is truncated: its last line \(\d+\) has no end"
    ):
        preprocess_day(tmp_path / "criteo", out / "day_23", table_rows=STAND_IN_ROWS,
                       expected_rows=None)  # fmt: skip
    day.write_bytes(text[: text.index(b"\n", len(text) // 2) + 1])  # cut at a line's end
    with pytest.raises(HarnessError, match=r"has \d+ rows; Criteo 1TB's has 178274637"):
        preprocess_day(tmp_path / "criteo", out / "day_23", table_rows=STAND_IN_ROWS)
    lines = text.splitlines(keepends=True)
    lines[10] = b"\t".join(lines[10].split(b"\t")[:30]) + b"\n"  # a line of 30 fields
    day.write_bytes(b"".join(lines))
    with pytest.raises(HarnessError, match=r"day_23:11: 30 fields, not 40: the file is truncated"):
        preprocess_day(tmp_path / "criteo", out / "day_23", table_rows=STAND_IN_ROWS,
                       expected_rows=None, chunk_pairs=50, progress=False)  # fmt: skip
    _nothing_left(out)


def test_truncated_materialized_file_is_one_line(tmp_path: Path) -> None:
    write_materialized(tmp_path / "criteo", 400)
    npz = tmp_path / "criteo" / "day_23_sparse_multi_hot.npz"
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(HarnessError, match=r"day_23_sparse_multi_hot\.npz.*truncated or damaged"):
        preprocess_day(tmp_path / "criteo", out / "day_23", table_rows=STAND_IN_ROWS,
                       expected_rows=None)  # fmt: skip
    _nothing_left(out)


def test_index_beyond_its_table_is_one_line(tmp_path: Path) -> None:
    write_materialized(tmp_path / "criteo", 400)
    out = tmp_path / "out"
    out.mkdir()
    rows = list(STAND_IN_ROWS)
    rows[21] = 100  # table 21's bags index up to 2,047: beyond a table of 100 rows
    with pytest.raises(HarnessError, match=r"table 21 index \d+ is outside its 100 rows"):
        preprocess_day(tmp_path / "criteo", out / "day_23", table_rows=rows, expected_rows=None,
                       chunk_pairs=64, progress=False)  # fmt: skip
    _nothing_left(out)
    assert bag_offsets()[-1] == 214


def test_no_input_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="holds neither MLCommons' multi-hot day 23"):
        preprocess_day(tmp_path, tmp_path / "out")
