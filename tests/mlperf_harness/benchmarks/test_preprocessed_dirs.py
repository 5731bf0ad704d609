"""preprocessed_dirs: one default directory per set of inputs, named after the data."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mlperf_harness.benchmarks.preprocessed_dirs import keyed_preprocessed_dir


def test_named_after_the_data_and_keyed_by_what_it_is_made_from(tmp_path: Path) -> None:
    data = tmp_path / "val"
    key = hashlib.sha256(f"{data}\nvocab".encode()).hexdigest()[:12]

    made = keyed_preprocessed_dir(tmp_path, "toy", "val", [data, "vocab"])

    assert made == tmp_path / "preprocessed" / "toy" / f"val-{key}"


def test_other_inputs_have_another_directory(tmp_path: Path) -> None:
    one = keyed_preprocessed_dir(tmp_path, "toy", "val", [tmp_path / "a"])
    other = keyed_preprocessed_dir(tmp_path, "toy", "val", [tmp_path / "b"])
    also = keyed_preprocessed_dir(tmp_path, "toy", "val", [tmp_path / "a", "more"])

    assert len({one, other, also}) == 3
