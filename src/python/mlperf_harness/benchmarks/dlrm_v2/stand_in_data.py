"""The embedded default's data for DLRM-v2: generated click logs in Criteo's raw form, clicks that
depend on the features, and LoadGen samples that are groups of a user's pairs.

With no Criteo 1TB at hand (it cannot be fetched here), the stand-in draws raw rows as a day file
holds them: a label, 13 integer counts and 26 categorical values, each already reduced to its
table's rows (the stand-in's tables are the real 26 with at most `MAX_ROWS` rows each). They go
through the same steps as real rows (datasets/criteo/transform.py): log(x + 3) of the counts and the
synthetic multi-hot step, which turns each categorical value into its table's bag of
`MULTI_HOT_SIZES[t]` rows.

The click of a pair is drawn from a logistic model of the raw row, fixed by the seed:
- each categorical value of 18 of the 26 tables carries an effect of its own (normal, a spread per
  table), the other 8 tables carry none;
- two pairs of tables interact through 4-wide latent vectors per row (what the cross network can
  learn that a sum of effects cannot);
- the log counts enter linearly and through one product;
- values are drawn with a heavy head (a power law over each table's rows), as in click logs, so
  that the rare rows' effects are hard to learn from one day.
A logistic model that knew the effects exactly would reach an AUC near 0.8, close to the real
model's 0.8031 on the real day; the fitted stand-in comes below that.

A LoadGen sample is one user's group of consecutive pairs; group sizes are drawn as the reference
draws them, uniformly among the 20 quantiles of its `tools/dist_quantile.txt` (100 to 700 pairs,
270 on average).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.dlrm_v2.topology import DENSE_FEATURES, TABLE_ROWS, TABLES
from mlperf_harness.errors import HarnessError

MAX_ROWS = 2048  # rows of a stand-in table (the real one's where it has fewer)
STAND_IN_ROWS = tuple(min(rows, MAX_ROWS) for rows in TABLE_ROWS)
# The reference's tools/dist_quantile.txt: pairs per sample at quantiles 0.05, 0.10, ..., 1.0.
GROUP_SIZE_QUANTILES = (
    100, 100, 200, 200, 200, 200, 200, 200, 200, 200,
    200, 200, 200, 200, 300, 300, 400, 500, 600, 700,
)  # fmt: skip
MAX_GROUP_SIZE = max(GROUP_SIZE_QUANTILES)
EFFECT_TABLES = 18  # tables whose values carry an effect of their own
INTERACTING_TABLES = ((0, 9), (19, 20))
LATENT = 4
HEAD_EXPONENT = 3.0  # value = floor(rows * u ** 3): the first rows are the frequent ones
BASE_LOGIT = -1.2  # about one click in four

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RawRows:
    """Raw click-log rows as a day file holds them, categorical values reduced to table rows."""

    labels: npt.NDArray[np.int32]  # [N] 0 or 1
    counts: npt.NDArray[np.int64]  # [N, 13] integer features (-3 .. large; real logs have -2)
    categorical: npt.NDArray[np.int64]  # [N, 26] a row of each table

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class ClickModel:
    """The logistic model that generated clicks come from (one per seed)."""

    effects: tuple[FloatArray, ...]  # per table: an effect per row
    latents: tuple[
        FloatArray, ...
    ]  # per table: [rows, LATENT] (zeros where it interacts with none)
    dense_weights: FloatArray  # [13]
    dense_product: tuple[int, int]

    def logits(self, counts: npt.NDArray[np.int64], categorical: IntArray) -> FloatArray:
        logged = np.log(np.maximum(counts, -2) + 3.0)
        centred = logged - 1.5
        logit = BASE_LOGIT + centred @ self.dense_weights
        first, second = self.dense_product
        logit = logit + 0.25 * centred[:, first] * centred[:, second]
        for table in range(TABLES):
            logit = logit + self.effects[table][categorical[:, table]]
        for left, right in INTERACTING_TABLES:
            logit = logit + np.sum(
                self.latents[left][categorical[:, left]]
                * self.latents[right][categorical[:, right]],
                axis=1,
            )
        result: FloatArray = logit
        return result


def _rng(seed: int, *stream: int) -> np.random.Generator:
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    return np.random.default_rng(np.random.SeedSequence([seed, *stream]))


def click_model(seed: int) -> ClickModel:
    rng = _rng(seed, 0)
    effect_tables = set(rng.permutation(TABLES)[:EFFECT_TABLES].tolist())
    interacting = {table for pair in INTERACTING_TABLES for table in pair}
    effects = []
    latents = []
    for table, rows in enumerate(STAND_IN_ROWS):
        spread = float(rng.uniform(0.3, 0.8)) if table in effect_tables else 0.0
        effects.append(rng.normal(0.0, spread, rows) if spread else np.zeros(rows))
        latents.append(
            rng.normal(0.0, 0.55, (rows, LATENT))
            if table in interacting
            else np.zeros((rows, LATENT))
        )
    return ClickModel(
        effects=tuple(effects),
        latents=tuple(latents),
        dense_weights=rng.normal(0.0, 0.35, DENSE_FEATURES),
        dense_product=(int(rng.integers(DENSE_FEATURES)), int(rng.integers(DENSE_FEATURES))),
    )


def generate_rows(seed: int, stream: int, count: int, model: ClickModel) -> RawRows:
    """`count` raw rows of stream `stream` of `seed` (the training and the inference rows are
    different streams of one seed), clicks drawn from `model`."""
    rng = _rng(seed, 1, stream)
    # Counts: mostly small, a long tail, and some missing (-1 .. -2 as in the real logs' few).
    scales = np.exp(rng.uniform(0.0, 4.0, DENSE_FEATURES))
    counts = np.floor(rng.exponential(1.0, (count, DENSE_FEATURES)) * scales).astype(np.int64)
    missing = rng.random((count, DENSE_FEATURES)) < 0.05
    counts[missing] = -1
    uniform = rng.random((count, TABLES))
    rows = np.array(STAND_IN_ROWS, dtype=np.float64)
    categorical = np.minimum(
        np.floor(rows * uniform**HEAD_EXPONENT).astype(np.int64), rows.astype(np.int64) - 1
    )
    probability = 1.0 / (1.0 + np.exp(-model.logits(counts, categorical)))
    labels = (rng.random(count) < probability).astype(np.int32)
    return RawRows(labels, counts, categorical)


def group_sizes(seed: int, groups: int) -> IntArray:
    """Pairs per sample for `groups` samples: a quantile of dist_quantile.txt drawn uniformly."""
    rng = _rng(seed, 2)
    quantiles = np.array(GROUP_SIZE_QUANTILES, dtype=np.int64)
    sizes: IntArray = quantiles[rng.integers(0, len(quantiles), groups)]
    return sizes


def group_offsets(sizes: IntArray) -> IntArray:
    """[groups + 1] where each group's pairs start (the last entry: every pair)."""
    offsets: IntArray = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return offsets
