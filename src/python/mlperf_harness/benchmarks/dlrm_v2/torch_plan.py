"""How DLRM-v2's torch runners run, resolved once from the run's settings (torch-free: the run
refuses a bad combination before any GPU is touched): how a batch's lookups are pooled
(`--embedding`), the dense part's precision (`--precision`), and where the tables go
(`--embedding_placement`). The runners read this plan and nothing else; result.json records it
(the run's provenance)."""

from __future__ import annotations

from dataclasses import dataclass

from mlperf_harness.config.fields import DLRM_EMBEDDINGS, HarnessSettings
from mlperf_harness.errors import HarnessError

# Our Triton kernel over fp16 rows: on one H200 it pooled a real-size batch in 1.19 ms against
# embedding_bag's 7.32 and the runners went 1.48x as fast (docs/performance.md#dlrm-v2); the
# int8 rows were slower (their scales cost more than the bytes they save).
DEFAULT_EMBEDDING = "kernel"
# The dense part (bottom MLP, cross layers, top MLP): fp16, or FP8 e4m3 weights with a scale per
# output channel (dense_part.py).
TORCH_PRECISIONS = ("fp16", "fp8")


@dataclass(frozen=True)
class TorchPlan:
    embedding: str  # one of DLRM_EMBEDDINGS
    precision: str  # one of TORCH_PRECISIONS
    placement: str | None = None  # replicated, sharded, or None: the runner decides by memory

    @property
    def int8_rows(self) -> bool:
        return self.embedding == "kernel-int8"

    def provenance(self) -> dict[str, str]:
        return {
            "embedding": self.embedding,
            "tables": "int8 rows" if self.int8_rows else "fp16 rows",
            "dense_precision": self.precision,
        }


def torch_plan(settings: HarnessSettings) -> TorchPlan:
    """The torch runners' plan from a run's resolved settings; a precision they lack is refused."""
    precision = settings.precision or "fp16"
    if precision not in TORCH_PRECISIONS:
        raise HarnessError(
            f"DLRM-v2's torch backend runs its dense part in {' or '.join(TORCH_PRECISIONS)}, not "
            f"--precision {precision} (the GPU configs' fp16: pass --precision fp16 or fp8)"
        )
    embedding = settings.embedding or DEFAULT_EMBEDDING
    assert embedding in DLRM_EMBEDDINGS  # HarnessSettings checks its choices
    return TorchPlan(embedding, precision, settings.embedding_placement)
