"""DLRM-v2's model and data as MLPerf fixes them (MLCommons' `recommendation/dlrm_v2`, read at
v5.1): DLRM-DCNv2 on Criteo 1TB made multi-hot.

- 13 dense features through a bottom MLP (512, 256, 128, ReLU after each layer).
- 26 sparse features, each a bag of `MULTI_HOT_SIZES[t]` row indices into table t (128 wide), the
  bag's rows summed (torchrec's EmbeddingBag, pooling SUM).
- The bottom MLP's output and the 26 pooled rows side by side (dense first: 27 x 128 = 3456),
  through 3 low-rank DCNv2 cross layers (rank 512): x' = x0 * (W (V x) + b) + x.
- A top MLP (1024, 1024, 512, 256, ReLU after each) and a last linear layer to one logit; the
  click probability is its sigmoid.

`Widths` says how wide each part is: `REAL` is the benchmark's, the stand-in divides every width
by the same factor (the topology stays: the same layers, tables and bag sizes)."""

from __future__ import annotations

from dataclasses import dataclass

DENSE_FEATURES = 13
# Rows of each of the 26 tables (the reference's num_embeddings_per_feature for the multi-hot
# Criteo set, --max-ind-range 40000000): 204,184,588 rows in all.
TABLE_ROWS = (
    40_000_000, 39_060, 17_295, 7_424, 20_265, 3, 7_122, 1_543, 63, 40_000_000, 3_067_956,
    405_282, 10, 2_209, 11_938, 155, 4, 976, 14, 40_000_000, 40_000_000, 40_000_000, 590_152,
    12_973, 108, 36,
)  # fmt: skip
# Row indices per bag of each table (the synthetic multi-hot step's --multi_hot_sizes): 214 a pair.
MULTI_HOT_SIZES = (
    3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1,
)  # fmt: skip
TABLES = len(TABLE_ROWS)
INDICES_PER_PAIR = sum(MULTI_HOT_SIZES)
CROSS_LAYERS = 3


@dataclass(frozen=True)
class Widths:
    """The widths of one DLRM-DCNv2 (the real one's, or the stand-in's)."""

    embedding: int  # each table's row, and the bottom MLP's last layer
    bottom: tuple[int, ...]  # the bottom MLP's layers, the last equal to `embedding`
    cross_rank: int  # the low-rank DCNv2 layers' inner width
    top: tuple[int, ...]  # the top MLP's layers before the last linear layer to one logit
    divisor: int = 1

    @property
    def interaction(self) -> int:
        """The cross network's width: the bottom MLP's output and the 26 pooled rows."""
        return (TABLES + 1) * self.embedding

    def reduced(self, divisor: int) -> Widths:
        return Widths(
            embedding=self.embedding // divisor,
            bottom=tuple(width // divisor for width in self.bottom),
            cross_rank=self.cross_rank // divisor,
            top=tuple(width // divisor for width in self.top),
            divisor=divisor,
        )


REAL = Widths(embedding=128, bottom=(512, 256, 128), cross_rank=512, top=(1024, 1024, 512, 256))


def table_offsets(rows: tuple[int, ...]) -> tuple[int, ...]:
    """Where each table starts when the 26 are stacked into one (27 entries, the last the total)."""
    offsets = [0]
    for count in rows:
        offsets.append(offsets[-1] + count)
    return tuple(offsets)


def bag_offsets() -> tuple[int, ...]:
    """Where each table's bag starts in a pair's 214 indices (27 entries, the last 214)."""
    return table_offsets(MULTI_HOT_SIZES)
