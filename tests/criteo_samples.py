"""Small Criteo inputs for the DLRM-v2 preprocessing tests: a raw day file of generated rows (the
stand-in's click model, its tables' rows), and MLCommons' materialized multi-hot layout."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from mlperf_harness.benchmarks.dlrm_v2 import stand_in_data
from mlperf_harness.benchmarks.dlrm_v2.stand_in import features
from mlperf_harness.benchmarks.dlrm_v2.stand_in_data import STAND_IN_ROWS
from mlperf_harness.benchmarks.dlrm_v2.topology import MULTI_HOT_SIZES, TABLES, bag_offsets


def write_raw_day(directory: Path, rows: int, seed: int = 4) -> stand_in_data.RawRows:
    """`directory/day_23` of `rows` generated rows; each categorical value written as a hex number
    that is its row plus a multiple of its table's rows (preprocessing takes it modulo)."""
    raw = stand_in_data.generate_rows(seed, 9, rows, stand_in_data.click_model(seed))
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(rows):
        counts = ["" if c == -1 else str(c) for c in raw.counts[i]]
        values = [
            format(int(raw.categorical[i, t]) + (i % 3) * STAND_IN_ROWS[t], "x")
            for t in range(TABLES)
        ]
        lines.append("\t".join([str(raw.labels[i]), *counts, *values]) + "\n")
    (directory / "day_23").write_text("".join(lines))
    return raw


def write_materialized(directory: Path, rows: int, seed: int = 5) -> stand_in_data.RawRows:
    """MLCommons' day_23_{dense.npy, sparse_multi_hot.npz, labels.npy} of generated rows."""
    raw = stand_in_data.generate_rows(seed, 9, rows, stand_in_data.click_model(seed))
    dense, sparse = features(raw)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "day_23_dense.npy", dense)
    np.save(directory / "day_23_labels.npy", raw.labels.reshape(-1, 1).astype(np.int32))
    offsets = bag_offsets()
    with zipfile.ZipFile(directory / "day_23_sparse_multi_hot.npz", "w", zipfile.ZIP_STORED) as npz:
        for table in range(TABLES):
            bag = np.ascontiguousarray(sparse[:, offsets[table] : offsets[table + 1]])
            assert bag.shape[1] == MULTI_HOT_SIZES[table]
            with npz.open(f"{table}.npy", "w") as member:
                np.lib.format.write_array(member, bag)  # type: ignore[no-untyped-call]
    return raw
