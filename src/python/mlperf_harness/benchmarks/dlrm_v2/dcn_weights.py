"""DLRM-DCNv2's weights by name, and their seeded initial values (the stand-in starts its fit from
these; the real-size GPU variant keeps them as they are).

Names follow the layers of topology.py: `bottom/{i}/weight` [in, out] and `bias`,
`embedding/{t}` [rows, width] per table, `cross/{l}/v` [width, rank], `cross/{l}/w` [rank, width],
`cross/{l}/bias`, `top/{i}/weight` and `bias` (the last layer's output 1). Matrices are stored
[in, out]: a layer is x @ weight + bias."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.dlrm_v2.topology import CROSS_LAYERS, DENSE_FEATURES, Widths

Weights = dict[str, npt.NDArray[np.float32]]


def mlp_shapes(inputs: int, widths: Sequence[int]) -> list[tuple[int, int]]:
    shapes = []
    for width in widths:
        shapes.append((inputs, width))
        inputs = width
    return shapes


def bottom_shapes(widths: Widths) -> list[tuple[int, int]]:
    return mlp_shapes(DENSE_FEATURES, widths.bottom)


def top_shapes(widths: Widths) -> list[tuple[int, int]]:
    return mlp_shapes(widths.interaction, (*widths.top, 1))


def initial_weights(widths: Widths, table_rows: Sequence[int], seed: int) -> Weights:
    """He-initialised MLPs, cross layers scaled so that each adds a small correction at first, and
    embedding rows of spread 1/sqrt(width) (torchrec's default is uniform within that)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 10]))
    weights: Weights = {}

    def dense(name: str, shape: tuple[int, int], gain: float = 2.0) -> None:
        scale = np.sqrt(gain / shape[0])
        weights[f"{name}/weight"] = (rng.standard_normal(shape) * scale).astype(np.float32)
        weights[f"{name}/bias"] = np.zeros(shape[1], dtype=np.float32)

    for index, shape in enumerate(bottom_shapes(widths)):
        dense(f"bottom/{index}", shape)
    bound = 1.0 / np.sqrt(widths.embedding)
    for table, rows in enumerate(table_rows):
        weights[f"embedding/{table}"] = rng.uniform(-bound, bound, (rows, widths.embedding)).astype(
            np.float32
        )
    width, rank = widths.interaction, widths.cross_rank
    for layer in range(CROSS_LAYERS):
        weights[f"cross/{layer}/v"] = (rng.standard_normal((width, rank)) / np.sqrt(width)).astype(
            np.float32
        )
        weights[f"cross/{layer}/w"] = (
            rng.standard_normal((rank, width)) * 0.1 / np.sqrt(rank)
        ).astype(np.float32)
        weights[f"cross/{layer}/bias"] = np.zeros(width, dtype=np.float32)
    shapes = top_shapes(widths)
    for index, shape in enumerate(shapes):
        dense(f"top/{index}", shape, gain=2.0 if index < len(shapes) - 1 else 1.0)
    return weights
