"""DLRM-v2 at its real size, for timing on GPUs: the real tables (204 million rows of 128, seeded
random rows drawn on the device: 52 GB in fp16) and the real widths (seeded, nothing fitted), with a
generated sample set whose indices spread uniformly over the real tables (no cache favours them).
Its outputs mean nothing: no accuracy is judged on it.

`python -m mlperf_harness.benchmarks.dlrm_v2.real_size --model <spec.json> --data <dir>` writes the
model's description (gpu_model.py reads it) and the set (store.py's layout)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlperf_harness.benchmarks.dlrm_v2 import stand_in_data
from mlperf_harness.benchmarks.dlrm_v2.gpu_model import write_real_size_spec
from mlperf_harness.benchmarks.dlrm_v2.topology import DENSE_FEATURES, MULTI_HOT_SIZES, TABLE_ROWS
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.datasets.criteo.store import CriteoPreprocessed, write_preprocessed

SEED = 0


def write_timing_set(directory: Path, samples: int, seed: int = SEED) -> CriteoPreprocessed:
    groups = stand_in_data.group_offsets(stand_in_data.group_sizes(seed, samples))
    pairs = int(groups[-1])
    rng = np.random.default_rng(np.random.SeedSequence([seed, 30]))
    dense = np.log(rng.exponential(8.0, (pairs, DENSE_FEATURES)) + 3.0).astype(np.float32)
    sparse = np.concatenate(
        [
            rng.integers(0, rows, (pairs, size), dtype=np.int32)
            for rows, size in zip(TABLE_ROWS, MULTI_HOT_SIZES, strict=True)
        ],
        axis=1,
    )
    labels = (rng.random(pairs) < 0.25).astype(np.uint8)
    source = f"generated timing set (seed {seed}, {samples} samples over the real tables' rows)"
    return write_preprocessed(directory, dense, sparse, labels, groups, TABLE_ROWS, source)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="real_size", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", type=Path, required=True, help="the description to write (.json)"
    )
    parser.add_argument("--data", type=Path, required=True, help="the timing set's directory")
    parser.add_argument("--samples", type=positive_int, default=8192)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        args.model.parent.mkdir(parents=True, exist_ok=True)
        write_real_size_spec(args.model, SEED)
        dataset = write_timing_set(args.data, args.samples)
        print(
            f"real-size model {args.model}; timing set {args.data}: {len(dataset)} samples, "
            f"{dataset.manifest.pairs} pairs"
        )
        return 0

    return run_entry_point("real_size", run)


if __name__ == "__main__":
    sys.exit(main())
