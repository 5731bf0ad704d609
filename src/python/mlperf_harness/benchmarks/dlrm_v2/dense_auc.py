"""What the torch runner's precisions cost the small stand-in's accuracy, measured on the CPU: its
held-out pairs through the runner's own pieces (the stacked fp16 tables pooled by StackedTables as
`--embedding` says, the dense part by dense_part.DenseLayers in fp32, fp16 and fp8: FP8 products
from e4m3 weights and per-row e4m3 activations in float32, the GPU's numbers up to the order of
the sums) against the stand-in's reference AUC (ONNX Runtime, fp32). With
`--cross kernel`, fp16 only, the cross layers' update by our Triton kernel (cross_update.py): on
the CPU under TRITON_INTERPRET=1.

`python -m mlperf_harness.benchmarks.dlrm_v2.dense_auc [--scratch_path P] [--embedding E]
[--cross C]` (torch needed: the development environment, not CI)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    run_entry_point,
    scratch_path,
)
from mlperf_harness.config.fields import DLRM_CROSS_WAYS, DLRM_EMBEDDINGS

PRECISIONS = ("fp32", "fp16", "fp8")
CHUNK = 8192  # pairs a step


def heldout_aucs(
    scratch: Path | None,
    embedding: str,
    precisions: Sequence[str] = PRECISIONS,
    cross: str = "torch",
) -> tuple[float, dict[str, float]]:
    """(the stand-in's reference AUC, {precision: held-out AUC through the torch pieces}), the
    cross layers' update done as `cross` says."""
    from mlperf_harness.accuracy.dlrm_auc import roc_auc
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers
    from mlperf_harness.benchmarks.dlrm_v2.gpu_model import load_source
    from mlperf_harness.benchmarks.dlrm_v2.gpu_tables import StackedTables
    from mlperf_harness.benchmarks.dlrm_v2.stand_in import ensure_stand_in
    from mlperf_harness.datasets.criteo.store import load_preprocessed
    from mlperf_harness.engines.torch_aot.torch_host import import_torch

    torch = import_torch()
    cpu = torch.device("cpu")
    built = ensure_stand_in(scratch_path(scratch, os.environ))
    dataset = load_preprocessed(built.preprocessed)
    source = load_source(built.model)
    tables = StackedTables(source, [cpu], embedding)
    dense = torch.from_numpy(np.asarray(dataset.dense, dtype=np.float32))
    sparse = torch.from_numpy(np.ascontiguousarray(dataset.sparse, dtype=np.int32))
    offsets = tables.layout.bag_offsets(CHUNK, cpu)
    pooled = torch.cat(
        [tables.pooled(sparse[i : i + CHUNK], offsets, cpu) for i in range(0, len(sparse), CHUNK)]
    )
    labels = np.asarray(dataset.labels)
    aucs = {}
    for precision in precisions:
        layers = DenseLayers(
            source.dense, source.widths, cpu, precision, "dlrm-v2 dense_auc", cross
        )
        probability = torch.cat(
            [
                layers.probability(dense[i : i + CHUNK], pooled[i : i + CHUNK])
                for i in range(0, len(dense), CHUNK)
            ]
        )
        aucs[precision] = roc_auc(labels, probability.numpy())
    return built.record.heldout_auc, aucs


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="dense_auc", description=__doc__.splitlines()[0])
    add_scratch_flag(parser)
    parser.add_argument("--embedding", choices=DLRM_EMBEDDINGS, default="torch")
    parser.add_argument("--cross", choices=DLRM_CROSS_WAYS, default="torch")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        precisions = PRECISIONS if args.cross == "torch" else ("fp16",)
        reference, aucs = heldout_aucs(args.scratch_path, args.embedding, precisions, args.cross)
        figures = ", ".join(f"{p} {auc:.6f} ({auc / reference:.4%})" for p, auc in aucs.items())
        print(
            f"dlrm-v2 stand-in, held-out AUC through the torch runner's pieces (tables pooled by "
            f"{args.embedding}, cross layers by {args.cross}): {figures} (reference "
            f"{reference:.6f})"
        )
        return 0

    return run_entry_point("dense_auc", run)


if __name__ == "__main__":
    raise SystemExit(main())
