"""DLRM-v2's tables as int8 rows with one fp16 scale per row (the real-size variant's option, half
the bytes a pooled lookup reads), and what that costs the small stand-in's AUC.

A row of `width` values is stored as `width` int8 values q, then its scale s as fp16 (two bytes),
padded with zeros to a multiple of `ROW_ALIGN` bytes: one row is one place in memory (a scale kept
in an array of its own would be a second random read per row), and rows of 32-byte multiples are
whole 32-byte sectors (128 values: 160 bytes, 5 sectors, against 256 in fp16). The value is q * s:
s is the row's largest magnitude / 127 rounded to fp16, q = round(x / s) (half to even) within
+-127; a row of zeros has s = 0. The numpy functions here and their torch twin
(pooled_lookup.quantize_rows, on the GPU) compute the same bytes.

`python -m mlperf_harness.benchmarks.dlrm_v2.int8_rows [--scratch_path P]` measures the small
stand-in's held-out AUC with its tables as they are (fp32) and as int8 rows (dequantized into the
same ONNX model, run on ONNX Runtime): the accuracy the int8 option costs, measured on this CPU."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    run_entry_point,
    scratch_path,
)
from mlperf_harness.errors import HarnessError

ROW_ALIGN = 32  # bytes: a GPU's memory sector
SCALE_BYTES = 2  # fp16
QMAX = 127


def row_bytes(width: int) -> int:
    """Bytes of one int8 row of `width` values and its scale, padded to ROW_ALIGN."""
    return -(-(width + SCALE_BYTES) // ROW_ALIGN) * ROW_ALIGN


def quantize_rows(rows: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.int8]:
    """[rows, width] float -> [rows, row_bytes(width)] int8 in the layout above."""
    values = np.asarray(rows, dtype=np.float32)
    count, width = values.shape
    if width % SCALE_BYTES:
        raise HarnessError(f"int8 rows need an even width (the fp16 scale's place), not {width}")
    scale = (np.abs(values).max(axis=1, initial=0.0) / np.float32(QMAX)).astype(np.float16)
    divisor = scale.astype(np.float32)[:, None]
    q = np.rint(np.divide(values, divisor, out=np.zeros_like(values), where=divisor != 0))
    out = np.zeros((count, row_bytes(width)), dtype=np.int8)
    out[:, :width] = np.clip(q, -QMAX, QMAX).astype(np.int8)
    out[:, width : width + SCALE_BYTES] = scale.view(np.int8).reshape(count, SCALE_BYTES)
    return out


def row_scales(table: npt.NDArray[np.int8], width: int) -> npt.NDArray[np.float16]:
    return np.ascontiguousarray(table[:, width : width + SCALE_BYTES]).view(np.float16)[:, 0]


def dequantize_rows(table: npt.NDArray[np.int8], width: int) -> npt.NDArray[np.float32]:
    """The float32 values the int8 rows stand for: q * s, exact in float32."""
    scales = row_scales(table, width).astype(np.float32)
    values: npt.NDArray[np.float32] = table[:, :width].astype(np.float32) * scales[:, None]
    return values


def int8_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the stand-in's ONNX model whose stacked `tables` hold their int8 rows' values."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for index, initializer in enumerate(copy.graph.initializer):
        if initializer.name == "tables":
            tables = numpy_helper.to_array(initializer)
            rounded = dequantize_rows(quantize_rows(tables), tables.shape[1])
            copy.graph.initializer[index].CopyFrom(
                numpy_helper.from_array(rounded.astype(tables.dtype), "tables")
            )
            return copy
    raise HarnessError("the model has no stacked `tables`: not DLRM-v2's stand-in layout")


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="int8_rows", description=__doc__.splitlines()[0])
    add_scratch_flag(parser)

    def run() -> int:
        from mlperf_harness.benchmarks.dlrm_v2.stand_in import ensure_stand_in, heldout_auc
        from mlperf_harness.datasets.criteo.store import load_preprocessed

        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        built = ensure_stand_in(scratch_path(args.scratch_path, os.environ))
        dataset = load_preprocessed(built.preprocessed)
        model = onnx.load(str(built.model))
        fp32 = heldout_auc(model.SerializeToString(), dataset)
        int8 = heldout_auc(int8_model(model).SerializeToString(), dataset)
        print(
            f"dlrm-v2 stand-in, held-out AUC over {dataset.manifest.pairs} pairs: tables fp32 "
            f"{fp32:.6f}, int8 rows {int8:.6f} ({int8 / fp32:.4%} of fp32)"
        )
        return 0

    return run_entry_point("int8_rows", run)


if __name__ == "__main__":
    raise SystemExit(main())
