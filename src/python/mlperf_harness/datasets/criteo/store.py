"""DLRM-v2's preprocessed set, as the harness reads it: one directory of arrays and a manifest.

- `dense.npy` float32 [pairs, 13], `sparse.npy` int32 [pairs, 214] (the 26 bags side by side, in
  table order), `labels.npy` uint8 [pairs];
- `groups.npy` int64 [samples + 1]: where each LoadGen sample's pairs start (its user's group);
- `manifest.json`: the counts, each table's rows (every index was checked against them) and where
  the set came from. Written last: a directory without it is not a set.

A set is written whole (a staging directory renamed into place) or not at all.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import staging_directory, write_json_atomic
from mlperf_harness.benchmarks.dlrm_v2.topology import (
    DENSE_FEATURES,
    INDICES_PER_PAIR,
    MULTI_HOT_SIZES,
    bag_offsets,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.write_errors import writing

MANIFEST_NAME = "manifest.json"
DENSE, SPARSE, LABELS, GROUPS = "dense.npy", "sparse.npy", "labels.npy", "groups.npy"


@dataclass(frozen=True)
class Manifest:
    pairs: int
    samples: int
    table_rows: list[int]
    multi_hot_sizes: list[int]
    source: str


@dataclass(frozen=True)
class CriteoPreprocessed:
    directory: Path
    manifest: Manifest
    dense: npt.NDArray[np.float32]  # memory-mapped
    sparse: npt.NDArray[np.int32]
    labels: npt.NDArray[np.uint8]
    groups: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return self.manifest.samples

    def pair_range(self, sample: int) -> tuple[int, int]:
        return int(self.groups[sample]), int(self.groups[sample + 1])


def check_indices(sparse: npt.NDArray[np.int32], table_rows: Sequence[int], where: str) -> None:
    """One line naming the first index outside its table (or negative), if any."""
    offsets = bag_offsets()
    for table, rows in enumerate(table_rows):
        bag = sparse[:, offsets[table] : offsets[table + 1]]
        if bag.size == 0:
            continue
        low, high = int(bag.min()), int(bag.max())
        if low < 0 or high >= rows:
            bad = low if low < 0 else high
            pair = int(np.argwhere((bag < 0) | (bag >= rows))[0][0])
            raise HarnessError(
                f"{where}: pair {pair}: table {table} index {bad} is outside its {rows} rows"
            )


def write_preprocessed(
    directory: Path,
    dense: npt.NDArray[np.float32],
    sparse: npt.NDArray[np.int32],
    labels: npt.NDArray[np.integer[Any]],
    groups: npt.NDArray[np.int64],
    table_rows: Sequence[int],
    source: str,
) -> CriteoPreprocessed:
    """Check the arrays and write them as a set at `directory` (replacing what is there)."""
    pairs = len(labels)
    if dense.shape != (pairs, DENSE_FEATURES) or sparse.shape != (pairs, INDICES_PER_PAIR):
        raise HarnessError(
            f"a DLRM-v2 set needs dense [{pairs}, {DENSE_FEATURES}] and sparse "
            f"[{pairs}, {INDICES_PER_PAIR}], not {dense.shape} and {sparse.shape}"
        )
    if len(groups) < 2 or groups[0] != 0 or groups[-1] != pairs or np.any(np.diff(groups) <= 0):
        raise HarnessError("sample boundaries must rise from 0 to the number of pairs")
    check_indices(sparse, table_rows, source)
    manifest = Manifest(
        pairs=pairs,
        samples=len(groups) - 1,
        table_rows=[int(rows) for rows in table_rows],
        multi_hot_sizes=list(MULTI_HOT_SIZES),
        source=source,
    )
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_directory(directory.parent, f".{directory.name}.")
    try:
        with writing(staging):
            np.save(staging / DENSE, np.ascontiguousarray(dense, dtype=np.float32))
            np.save(staging / SPARSE, np.ascontiguousarray(sparse, dtype=np.int32))
            np.save(staging / LABELS, np.ascontiguousarray(labels, dtype=np.uint8))
            np.save(staging / GROUPS, np.ascontiguousarray(groups, dtype=np.int64))
        write_json_atomic(staging / MANIFEST_NAME, asdict(manifest))
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return load_preprocessed(directory)


def _manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_NAME
    try:
        raw: dict[str, Any] = json.loads(path.read_text())
        return Manifest(**raw)
    except FileNotFoundError:
        raise HarnessError(
            f"{directory} holds no preprocessed DLRM-v2 set (no {MANIFEST_NAME}): run "
            "preprocess_data"
        ) from None
    except (OSError, ValueError, TypeError) as error:
        raise HarnessError(f"{path} is not a DLRM-v2 manifest: {error}") from error


def load_preprocessed(directory: Path) -> CriteoPreprocessed:
    manifest = _manifest(directory)
    arrays = []
    for name, dtype, shape in (
        (DENSE, np.float32, (manifest.pairs, DENSE_FEATURES)),
        (SPARSE, np.int32, (manifest.pairs, INDICES_PER_PAIR)),
        (LABELS, np.uint8, (manifest.pairs,)),
        (GROUPS, np.int64, (manifest.samples + 1,)),
    ):
        try:
            array = np.load(directory / name, mmap_mode="r")
        except (OSError, ValueError) as error:
            raise HarnessError(f"{directory / name}: cannot read: {error}") from error
        if array.dtype != dtype or array.shape != shape:
            raise HarnessError(
                f"{directory / name} is {array.dtype} {array.shape}; its manifest says "
                f"{np.dtype(dtype)} {shape}"
            )
        arrays.append(array)
    dense, sparse, labels, groups = arrays
    return CriteoPreprocessed(directory, manifest, dense, sparse, labels, groups)


def manifest_json(dataset: CriteoPreprocessed) -> str:
    return json.dumps(asdict(dataset.manifest))
