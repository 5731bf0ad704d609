"""Fit a DLRM-DCNv2 to click labels with numpy: binary cross-entropy, Adam, mini-batches.

The stand-in is small (topology.py's widths / 16, tables of at most 2,048 rows), so a hand-written
forward and backward pass over numpy arrays trains it in well under a minute on two cores: no
torch needed. A pooled lookup is a sparse matrix product: the batch's bags as a CSR matrix
[pairs * 26, rows of all tables] (one 1 per bag member) times the stacked tables; its transpose
carries the gradient back to the rows."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse  # type: ignore[import-untyped]  # no stubs published

from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import Weights, bottom_shapes, top_shapes
from mlperf_harness.benchmarks.dlrm_v2.topology import (
    CROSS_LAYERS,
    MULTI_HOT_SIZES,
    TABLES,
    Widths,
    table_offsets,
)

Array = npt.NDArray[np.float32]


@dataclass(frozen=True)
class FitSettings:
    epochs: int = 3
    batch: int = 1024
    learning_rate: float = 3e-3
    embedding_learning_rate: float = 2e-2
    seed: int = 0


@dataclass(frozen=True)
class FitReport:
    steps: int
    seconds: float
    final_loss: float  # mean over the last epoch


def bag_matrix(sparse: npt.NDArray[np.int32], table_rows: Sequence[int]) -> scipy.sparse.csr_matrix:
    """[pairs * 26, sum(table_rows)]: row p * 26 + t holds a 1 for each index of pair p's bag t
    (in the stacked tables' numbering); a repeated index counts twice, as a sum pooling does."""
    pairs = len(sparse)
    starts = np.array(table_offsets(tuple(table_rows))[:-1], dtype=np.int64)
    table_of_column = np.repeat(np.arange(TABLES), MULTI_HOT_SIZES)
    columns = (sparse.astype(np.int64) + starts[table_of_column][None, :]).ravel()
    # Pair-major: pair p's 214 indices are its 26 bags in table order.
    indptr = np.concatenate(
        [[0], np.cumsum(np.tile(np.array(MULTI_HOT_SIZES, dtype=np.int64), pairs))]
    )
    data = np.ones(len(columns), dtype=np.float32)
    return scipy.sparse.csr_matrix(
        (data, columns, indptr), shape=(pairs * TABLES, int(sum(table_rows)))
    )


class DcnModel:
    """Forward and backward of one DLRM-DCNv2 over numpy weights (see dcn_weights.py)."""

    def __init__(self, weights: Weights, widths: Widths, table_rows: Sequence[int]) -> None:
        self.weights = weights
        self.widths = widths
        self.table_rows = tuple(table_rows)
        self.bottom_layers = len(bottom_shapes(widths))
        self.top_layers = len(top_shapes(widths))

    def stacked_tables(self) -> Array:
        return np.concatenate([self.weights[f"embedding/{t}"] for t in range(TABLES)])

    def logits(self, dense: Array, sparse: npt.NDArray[np.int32]) -> Array:
        logit, _ = self._forward(dense, bag_matrix(sparse, self.table_rows), self.stacked_tables())
        return logit

    def _forward(
        self, dense: Array, bags: scipy.sparse.csr_matrix, tables: Array
    ) -> tuple[Array, dict[str, object]]:
        w = self.weights
        cache: dict[str, object] = {}
        h = dense
        bottom_in = []
        for i in range(self.bottom_layers):
            bottom_in.append(h)
            h = np.maximum(h @ w[f"bottom/{i}/weight"] + w[f"bottom/{i}/bias"], 0.0)
        pairs = len(dense)
        pooled = np.asarray(bags @ tables, dtype=np.float32).reshape(pairs, TABLES, -1)
        x0 = np.concatenate([h[:, None, :], pooled], axis=1).reshape(pairs, -1)
        x = x0
        cross_in = []
        for layer in range(CROSS_LAYERS):
            u = x @ w[f"cross/{layer}/v"]
            c = u @ w[f"cross/{layer}/w"] + w[f"cross/{layer}/bias"]
            cross_in.append((x, u, c))
            x = x0 * c + x
        top_in = []
        for i in range(self.top_layers):
            top_in.append(x)
            x = x @ w[f"top/{i}/weight"] + w[f"top/{i}/bias"]
            if i < self.top_layers - 1:
                x = np.maximum(x, 0.0)
        cache.update(bottom_in=bottom_in, bottom_out=h, x0=x0, cross_in=cross_in, top_in=top_in)
        return x[:, 0], cache

    def _backward(
        self, dlogit: Array, cache: dict[str, object], bags: scipy.sparse.csr_matrix
    ) -> Weights:
        w = self.weights
        grads: Weights = {}
        top_in: list[Array] = cache["top_in"]  # type: ignore[assignment]
        g = dlogit[:, None]
        for i in reversed(range(self.top_layers)):
            x = top_in[i]
            grads[f"top/{i}/weight"] = x.T @ g
            grads[f"top/{i}/bias"] = g.sum(axis=0)
            g = g @ w[f"top/{i}/weight"].T
            if i > 0:
                g = g * (top_in[i] > 0)
        x0: Array = cache["x0"]  # type: ignore[assignment]
        cross_in: list[tuple[Array, Array, Array]] = cache["cross_in"]  # type: ignore[assignment]
        dx0 = np.zeros_like(x0)
        for layer in reversed(range(CROSS_LAYERS)):
            x, u, c = cross_in[layer]
            dc = g * x0
            dx0 += g * c
            du = dc @ w[f"cross/{layer}/w"].T
            grads[f"cross/{layer}/w"] = u.T @ dc
            grads[f"cross/{layer}/bias"] = dc.sum(axis=0)
            grads[f"cross/{layer}/v"] = x.T @ du
            g = g + du @ w[f"cross/{layer}/v"].T
        dx0 += g
        pairs = len(x0)
        split = dx0.reshape(pairs, TABLES + 1, -1)
        dpooled = np.ascontiguousarray(split[:, 1:, :]).reshape(pairs * TABLES, -1)
        dtables = np.asarray(bags.T @ dpooled, dtype=np.float32)
        starts = table_offsets(self.table_rows)
        for t in range(TABLES):
            grads[f"embedding/{t}"] = dtables[starts[t] : starts[t + 1]]
        bottom_in: list[Array] = cache["bottom_in"]  # type: ignore[assignment]
        h: Array = cache["bottom_out"]  # type: ignore[assignment]
        g = split[:, 0, :] * (h > 0)
        for i in reversed(range(self.bottom_layers)):
            x = bottom_in[i]
            grads[f"bottom/{i}/weight"] = x.T @ g
            grads[f"bottom/{i}/bias"] = g.sum(axis=0)
            if i > 0:
                g = (g @ w[f"bottom/{i}/weight"].T) * (x > 0)
        return grads

    def fit(
        self,
        dense: Array,
        sparse: npt.NDArray[np.int32],
        labels: npt.NDArray[np.integer[Any]],
        settings: FitSettings,
        on_epoch: Callable[[int, float], None] | None = None,
    ) -> FitReport:
        started = time.perf_counter()
        rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 20]))
        moments = {name: (np.zeros_like(v), np.zeros_like(v)) for name, v in self.weights.items()}
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        step = 0
        loss_sum = 0.0
        target = labels.astype(np.float32)
        for epoch in range(settings.epochs):
            order = rng.permutation(len(labels))
            loss_sum, seen = 0.0, 0
            for start in range(0, len(order), settings.batch):
                picked = np.sort(order[start : start + settings.batch])
                bags = bag_matrix(sparse[picked], self.table_rows)
                logit, cache = self._forward(dense[picked], bags, self.stacked_tables())
                y = target[picked]
                probability = 1.0 / (1.0 + np.exp(-logit))
                loss = np.logaddexp(0.0, logit) - y * logit
                loss_sum += float(loss.sum())
                seen += len(picked)
                grads = self._backward((probability - y) / len(picked), cache, bags)
                step += 1
                for name, grad in grads.items():
                    m, v = moments[name]
                    m *= beta1
                    m += (1 - beta1) * grad
                    v *= beta2
                    v += (1 - beta2) * grad * grad
                    rate = (
                        settings.embedding_learning_rate
                        if name.startswith("embedding/")
                        else settings.learning_rate
                    )
                    correction = np.sqrt(1 - beta2**step) / (1 - beta1**step)
                    self.weights[name] -= (rate * correction * m / (np.sqrt(v) + eps)).astype(
                        np.float32
                    )
            if on_epoch is not None:
                on_epoch(epoch, loss_sum / max(seen, 1))
        last = loss_sum / max(len(labels), 1)
        return FitReport(step, time.perf_counter() - started, last)
