"""How DLRM-v2's torch runners run, resolved once from the run's settings (torch-free: the run
refuses a bad combination before any GPU is touched): how a batch's lookups are pooled
(`--embedding`), the dense part's precision (`--precision`), how its cross layers' update is done
(`--cross`), and where the tables go (`--embedding_placement`). The runners read this plan and
nothing else; result.json records it (the run's provenance)."""

from __future__ import annotations

from dataclasses import dataclass

from mlperf_harness.config.fields import DLRM_CROSS_WAYS, DLRM_EMBEDDINGS, HarnessSettings
from mlperf_harness.errors import HarnessError

# Our Triton kernel over fp16 rows: on one H200 it pooled a real-size batch in 1.19 ms against
# embedding_bag's 7.32 and the runners went 1.48x as fast (docs/performance.md#dlrm-v2); the
# int8 rows were slower (their scales cost more than the bytes they save).
DEFAULT_EMBEDDING = "kernel"
# The dense part (bottom MLP, cross layers, top MLP): fp16, or FP8 e4m3 weights with a scale per
# output channel (dense_part.py).
TORCH_PRECISIONS = ("fp16", "fp8")
# The cross layers' update x + x0 * (W y + b): torch's addmm then addcmul, until a GPU has timed our
# one-pass Triton kernel (cross_update.py, `kernel`) faster: the device script's `cross` phase.
DEFAULT_CROSS = "torch"
CROSS_KERNEL_PRECISION = "fp16"  # the kernel reads fp16 weights; FP8's are e4m3


@dataclass(frozen=True)
class TorchPlan:
    embedding: str  # one of DLRM_EMBEDDINGS
    precision: str  # one of TORCH_PRECISIONS
    placement: str | None = None  # replicated, sharded, or None: the runner decides by memory
    cross: str = DEFAULT_CROSS  # one of DLRM_CROSS_WAYS

    @property
    def int8_rows(self) -> bool:
        return self.embedding == "kernel-int8"

    def provenance(self) -> dict[str, str]:
        return {
            "embedding": self.embedding,
            "tables": "int8 rows" if self.int8_rows else "fp16 rows",
            "dense_precision": self.precision,
            "cross": self.cross,
        }


def torch_plan(settings: HarnessSettings) -> TorchPlan:
    """The torch runners' plan from a run's resolved settings; a precision they lack is refused."""
    precision = settings.precision or "fp16"
    if precision not in TORCH_PRECISIONS:
        raise HarnessError(
            f"DLRM-v2's torch backend runs its dense part in {' or '.join(TORCH_PRECISIONS)}, not "
            f"--precision {precision} (pass --precision fp16 or fp8)"
        )
    embedding = settings.embedding or DEFAULT_EMBEDDING
    assert embedding in DLRM_EMBEDDINGS  # HarnessSettings checks its choices
    cross = settings.cross or DEFAULT_CROSS
    assert cross in DLRM_CROSS_WAYS
    check_cross(cross, precision)
    return TorchPlan(embedding, precision, settings.embedding_placement, cross)


def check_cross(cross: str, precision: str) -> None:
    """The cross kernel runs the fp16 dense part only: another precision is refused in one line."""
    if cross == "kernel" and precision != CROSS_KERNEL_PRECISION:
        raise HarnessError(
            f"DLRM-v2's cross kernel (--cross kernel) runs the {CROSS_KERNEL_PRECISION} dense "
            f"part, not --precision {precision} (pass --cross torch, or --precision "
            f"{CROSS_KERNEL_PRECISION})"
        )
