"""DLRM-DCNv2 as an ONNX graph written from numpy weights (dcn_weights.py), run by ONNX Runtime.

Inputs `dense` float32 [pairs, 13] (log counts) and `sparse` int32 [pairs, 214] (the 26 bags side
by side, each index a row of its own table); output `probability` float32 [pairs], the click
probability. The pooled lookups are in the graph: the 26 tables stacked into one, each bag's indices
moved to its table's rows (one Add), one Gather of every pair's 214 rows, and the per-table sums as
one MatMul by a fixed [26, 214] 0/1 pooling matrix."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import Weights, bottom_shapes, top_shapes
from mlperf_harness.benchmarks.dlrm_v2.topology import (
    CROSS_LAYERS,
    DENSE_FEATURES,
    INDICES_PER_PAIR,
    MULTI_HOT_SIZES,
    TABLES,
    Widths,
    bag_offsets,
    table_offsets,
)
from mlperf_harness.onnx_model import GraphWriter, make_model

DENSE_INPUT, SPARSE_INPUT, OUTPUT_NAME = "dense", "sparse", "probability"
OPSET = 13


def pooling_matrix() -> npt.NDArray[np.float32]:
    """[26, 214]: row t sums the columns of table t's bag."""
    pool = np.zeros((TABLES, INDICES_PER_PAIR), dtype=np.float32)
    offsets = bag_offsets()
    for table in range(TABLES):
        pool[table, offsets[table] : offsets[table + 1]] = 1.0
    return pool


def dcn_model(
    weights: Weights,
    widths: Widths,
    table_rows: tuple[int, ...],
    doc: str,
    metadata: Mapping[str, str],
) -> onnx.ModelProto:
    g = GraphWriter(weights)

    def linear(x: str, name: str, relu: bool) -> str:
        out = g.node(
            "MatMul", [x, g.constant(f"{name}/weight", weights[f"{name}/weight"])], f"{name}/mm"
        )
        out = g.node(
            "Add", [out, g.constant(f"{name}/bias", weights[f"{name}/bias"])], f"{name}/add"
        )
        return g.node("Relu", [out], f"{name}/relu") if relu else out

    h = DENSE_INPUT
    for index in range(len(bottom_shapes(widths))):
        h = linear(h, f"bottom/{index}", relu=True)
    z = g.node("Unsqueeze", [h, g.constant("axis1", np.array([1], np.int64))], "bottom/unsqueezed")

    starts = np.array(table_offsets(table_rows)[:-1], dtype=np.int32)
    column_offsets = np.repeat(starts, MULTI_HOT_SIZES).astype(np.int32)
    rows = g.node("Add", [SPARSE_INPUT, g.constant("bag_offsets", column_offsets)], "rows")
    stacked = np.concatenate([weights[f"embedding/{t}"] for t in range(TABLES)])
    gathered = g.node("Gather", [g.constant("tables", stacked), rows], "gathered", axis=0)
    pooled = g.node("MatMul", [g.constant("pooling", pooling_matrix()), gathered], "pooled")
    features = g.node("Concat", [z, pooled], "features", axis=1)
    x0 = g.node(
        "Reshape",
        [features, g.constant("flat", np.array([-1, widths.interaction], np.int64))],
        "x0",
    )
    x = x0
    for layer in range(CROSS_LAYERS):
        name = f"cross/{layer}"
        u = g.node("MatMul", [x, g.constant(f"{name}/v", weights[f"{name}/v"])], f"{name}/u")
        c = g.node("MatMul", [u, g.constant(f"{name}/w", weights[f"{name}/w"])], f"{name}/c")
        c = g.node("Add", [c, g.constant(f"{name}/bias", weights[f"{name}/bias"])], f"{name}/cb")
        scaled = g.node("Mul", [x0, c], f"{name}/scaled")
        x = g.node("Add", [scaled, x], f"{name}/out")
    layers = len(top_shapes(widths))
    for index in range(layers):
        x = linear(x, f"top/{index}", relu=index < layers - 1)
    probability = g.node("Sigmoid", [x], "sigmoid")
    g.node("Reshape", [probability, g.constant("vector", np.array([-1], np.int64))], OUTPUT_NAME)
    graph = helper.make_graph(
        g.nodes,
        "dlrm_dcnv2",
        [
            helper.make_tensor_value_info(
                DENSE_INPUT, TensorProto.FLOAT, ["pairs", DENSE_FEATURES]
            ),
            helper.make_tensor_value_info(
                SPARSE_INPUT, TensorProto.INT32, ["pairs", INDICES_PER_PAIR]
            ),
        ],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["pairs"])],
        g.initializers,
    )
    return make_model(graph, OPSET, doc=doc, metadata=metadata)
