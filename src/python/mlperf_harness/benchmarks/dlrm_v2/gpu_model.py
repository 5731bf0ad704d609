"""DLRM-v2's model for the torch backend: where its weights come from and how its tables are placed.

Two sources: an ONNX model of the stand-in's interface (its initializers: the dense layers by name,
the 26 tables stacked as `tables`), or a real-size description (`real_size.py`: the real tables'
rows with seeded random rows, made on the GPU). Placement: the tables in fp16 on every GPU
(replicated) or split by rows across the host's GPUs (sharded), as the system's config says
(`embedding_placement`); without a word from the config, replicated where the tables take at most
`REPLICATE_SHARE` of one GPU's memory."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import Weights, initial_weights
from mlperf_harness.benchmarks.dlrm_v2.int8_rows import row_bytes
from mlperf_harness.benchmarks.dlrm_v2.topology import REAL, TABLE_ROWS, Widths, table_offsets
from mlperf_harness.errors import HarnessError

REAL_SIZE_KIND = "dlrm-v2-real-size"
REPLICATE_SHARE = 0.5  # of a GPU's memory: the rest holds the loaded samples and activations


@dataclass(frozen=True)
class GpuModelSource:
    """The dense weights (numpy, [in, out] matrices), and the tables: stacked numpy rows, or
    (seed, rows per table) to draw on the device."""

    dense: Weights
    widths: Widths
    table_rows: tuple[int, ...]
    stacked_tables: npt.NDArray[np.float32] | None
    table_seed: int | None

    @property
    def total_rows(self) -> int:
        return sum(self.table_rows)

    def table_bytes(self, int8: bool = False) -> int:
        """The stacked tables' bytes: fp16 rows, or int8 rows with their scales (int8_rows.py)."""
        width = self.widths.embedding
        return self.total_rows * (row_bytes(width) if int8 else width * 2)


def write_real_size_spec(path: Path, seed: int = 0) -> Path:
    path.write_text(json.dumps({"kind": REAL_SIZE_KIND, "seed": seed}) + "\n")
    return path


def is_real_size_spec(path: Path) -> bool:
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        return bool(json.loads(path.read_text()).get("kind") == REAL_SIZE_KIND)
    except (OSError, ValueError, AttributeError):
        return False


def load_source(path: Path) -> GpuModelSource:
    if is_real_size_spec(path):
        seed = int(json.loads(path.read_text())["seed"])
        dense = initial_weights(REAL, (), seed)
        return GpuModelSource(dense, REAL, TABLE_ROWS, None, seed)
    model = onnx.load(str(path))
    weights = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    if "tables" not in weights:
        raise HarnessError(f"{path} has no stacked `tables`: not DLRM-v2's stand-in layout")
    metadata = {entry.key: entry.value for entry in model.metadata_props}
    from mlperf_harness.benchmarks.dlrm_v2.stand_in import TABLE_ROWS_KEY

    if TABLE_ROWS_KEY not in metadata:
        raise HarnessError(f"{path} does not say its tables' rows ({TABLE_ROWS_KEY})")
    rows = tuple(int(r) for r in metadata[TABLE_ROWS_KEY].split(","))
    tables = weights.pop("tables")
    if tables.shape[0] != table_offsets(rows)[-1]:
        raise HarnessError(f"{path}: `tables` has {tables.shape[0]} rows, its metadata {sum(rows)}")
    width = tables.shape[1]
    bottom = tuple(weights[f"bottom/{i}/weight"].shape[1] for i in range(len(REAL.bottom)))
    top = tuple(weights[f"top/{i}/weight"].shape[1] for i in range(len(REAL.top)))
    widths = Widths(width, bottom, weights["cross/0/v"].shape[1], top, REAL.embedding // width)
    dense = {name: np.asarray(v, np.float32) for name, v in weights.items() if "/" in name}
    return GpuModelSource(dense, widths, rows, tables, None)


def choose_placement(
    configured: str | None, table_bytes: int, gpu_memory: list[int]
) -> tuple[str, str]:
    """(placement, why): the config's word, else replicated where one GPU holds the tables."""
    if configured is not None:
        return configured, "the system's config"
    if table_bytes <= REPLICATE_SHARE * min(gpu_memory):
        return "replicated", f"tables of {table_bytes / 2**30:.1f} GiB fit one GPU"
    if table_bytes <= REPLICATE_SHARE * sum(gpu_memory):
        return "sharded", f"tables of {table_bytes / 2**30:.1f} GiB need {len(gpu_memory)} GPUs"
    raise HarnessError(
        f"DLRM-v2's tables take {table_bytes / 2**30:.1f} GiB: more than these "
        f"{len(gpu_memory)} GPUs can hold beside the samples"
    )


def shard_bounds(total_rows: int, shards: int) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) of the stacked tables, one per GPU, as equal as rows allow."""
    edges = np.linspace(0, total_rows, shards + 1).round().astype(np.int64)
    return [(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]
