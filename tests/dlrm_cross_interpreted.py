"""Run under TRITON_INTERPRET=1 by test_cross_kernel_interpreted.py (a process of its own: Triton
reads that variable when the kernel is defined): DLRM-v2's fused cross layer update (cross_kernel.py)
on the CPU, through the launch code the dense part uses, against the float32 update of the same
fp16 operands. Prints one line per check and exits non-zero when one fails.

`--scratch_path P` adds the small stand-in's held-out AUC (built under P when absent) through
dense_part.DenseLayers in fp16 with `--cross torch` and `--cross kernel`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.dlrm_v2 import cross_update
from mlperf_harness.benchmarks.dlrm_v2.cross_update import CrossConfig

# The AUCs of the two ways may differ by this much: the kernel takes the update on fp32 sums where
# torch rounds W y + b to fp16 first, which moves a few probabilities by an fp16 step.
AUC_TOLERANCE = 1e-4


def operands(m: int, n: int, k: int, slice_x: bool) -> tuple[torch.Tensor, ...]:
    """fp16 (y, W, b, x, x0) at a DCN's scales; with `slice_x`, x and x0 are column slices of wider
    rows (their row strides are not N)."""
    y = torch.randn(m, k).half()
    weight = (torch.randn(n, k) / k**0.5).half()
    bias = (torch.randn(n) * 0.1).half()
    if slice_x:
        x = torch.randn(m, n + 5).half()[:, 3 : 3 + n]
        x0 = torch.randn(m, n + 9).half()[:, :n]
    else:
        x, x0 = torch.randn(m, n).half(), torch.randn(m, n).half()
    return y, weight, bias, x, x0


def within_rounding(got: torch.Tensor, want: torch.Tensor, terms: torch.Tensor, k: int) -> bool:
    """Every fp16 value within one fp16 step (at the float32 value's magnitude) of it, plus what
    summing K + 2 terms in another order costs in float32 (K steps of float32 at the terms'
    magnitude `terms`: where x and x0 * c nearly cancel, that is more than an fp16 step of x')."""
    step = torch.finfo(torch.float16).eps * want.abs().clamp(min=2.0**-24)
    order = (k + 2) * torch.finfo(torch.float32).eps * terms
    return bool(((got.float() - want).abs() <= step + order).all())


def term_magnitudes(y: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor,
                    x0: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """float32 [M, N]: |x| + |x0| (|y| |W|^T + |b|), what the update's sums are made of."""
    product = y.float().abs() @ weight.float().abs().t() + bias.float().abs()
    return x.float().abs() + x0.float().abs() * product


def report(label: str, same: bool) -> bool:
    print(f"{label}: {'equal' if same else 'DIFFER'}")
    return same


def check_sizes(m: int, n: int, k: int, slice_x: bool = False) -> bool:
    """The kernel in every launch form (and a small one that leaves every size ragged) against the
    float32 update; and torch_update, given float32 y, W and b, computes that same update."""
    y, weight, bias, x, x0 = operands(m, n, k, slice_x)
    want = cross_update.cross_float32_reference(y, weight, bias, x, x0)
    terms = term_magnitudes(y, weight, bias, x, x0)
    label = f"M {m}, N {n}, K {k}{', x sliced' if slice_x else ''}"
    good = True
    for config in (*cross_update.CANDIDATES, CrossConfig(16, 32, 16, 2, 1, 1)):
        got = cross_update.fused_update(y, weight, bias, x, x0, config)
        same = got.dtype == torch.float16 and tuple(got.shape) == (m, n)
        good &= report(f"{label}, {config.label()}", same and within_rounding(got, want, terms, k))
    torch_form = cross_update.torch_update(y.float(), weight.float(), bias.float(), x, x0)
    good &= report(f"{label}, torch form in float32", within_rounding(torch_form, want, terms, k))
    return good


def check_refusals() -> bool:
    """A float32 operand or a wrong width is refused in one line."""
    y, weight, bias, x, x0 = operands(4, 24, 8, False)
    good = True
    for bad, says in (
        ((y.float(), weight, bias, x, x0), "fp16 y [4, 8], not float32"),
        ((y, weight[:, :6], bias, x, x0), "fp16 W [24, 8], not float16 [24, 6]"),
    ):
        try:
            cross_update.fused_update(*bad)
            refused = False
        except Exception as error:
            refused = says in str(error) and "\n" not in str(error)
        good &= report(f"refused: {says}", refused)
    return good


def check_dense_layers() -> bool:
    """DenseLayers in fp16 with the kernel: its probabilities are the torch path's up to fp16
    rounding (both near the float32 path's), at the small stand-in's widths."""
    import numpy as np

    from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers
    from mlperf_harness.benchmarks.dlrm_v2.topology import REAL

    widths = REAL.reduced(16)
    weights = initial_weights(widths, (), 1)
    cpu = torch.device("cpu")
    rng = np.random.default_rng(1)
    dense = torch.from_numpy(rng.normal(0, 1, (77, 13)).astype(np.float32))
    pooled = torch.from_numpy(rng.normal(0, 0.3, (77, 26 * widths.embedding)).astype(np.float32))

    def probability(precision: str, cross: str) -> torch.Tensor:
        layers = DenseLayers(weights, widths, cpu, precision, cross=cross)
        return layers.probability(dense, pooled)

    p32, fp16, kernel = (
        probability("fp32", "torch"),
        probability("fp16", "torch"),
        probability("fp16", "kernel"),
    )
    same = (
        kernel.shape == (77,)
        and float((kernel - fp16).abs().max()) < 5e-3
        and float((kernel - p32).abs().max()) < 5e-3
    )
    return report("DenseLayers fp16, kernel = torch (probabilities within 5e-3)", same)


def check_cross_ab() -> bool:
    """torch_raw --cross_ab's comparison of one layer's update (cross_ab.compare_updates) on the
    CPU, timed by the wall clock: every way timed, none failed, every kernel form within fp16
    rounding of the float32 update and no further from it than torch's form; its table printed."""
    from mlperf_harness.benchmarks.dlrm_v2 import cross_ab

    weight = (torch.randn(216, 32) / 32**0.5).half()
    bias = (torch.randn(216) * 0.1).half()
    record = cross_ab.compare_updates(weight, bias, 50, 1, cross_ab.wall_ms, rounds=1)
    print(cross_ab.format_updates(record))
    diffs = {row["method"]: row["max_abs_diff"] for row in record["methods"]}
    torch_diff = diffs.pop("torch addmm + addcmul")
    bound = torch.finfo(torch.float16).eps * record["reference_max_abs"]
    same = (
        not record["failed"]
        and len(diffs) == len(cross_update.CANDIDATES)
        and all(row["ms"] > 0 and row["gb_per_s"] > 0 for row in record["methods"])
        and all(diff <= min(torch_diff, bound) for diff in diffs.values())
    )
    return report("cross_ab's table", same)


def check_stand_in_auc(scratch: Path) -> bool:
    from mlperf_harness.benchmarks.dlrm_v2.dense_auc import heldout_aucs

    reference, by_torch = heldout_aucs(scratch, "torch", ("fp16",), "torch")
    _, by_kernel = heldout_aucs(scratch, "torch", ("fp16",), "kernel")
    a, b = by_torch["fp16"], by_kernel["fp16"]
    print(f"stand-in held-out AUC fp16: torch {a:.6f}, kernel {b:.6f}, reference {reference:.6f}")
    return report("stand-in AUC kernel = torch", abs(a - b) <= AUC_TOLERANCE and b > 0.7)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch_path", type=Path, default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    results = [
        check_sizes(37, 216, 32),  # the small stand-in's widths, M in one partial block
        check_sizes(300, 100, 70, slice_x=True),  # nothing a multiple of a block
        check_sizes(129, 3456 // 16, 512 // 16 + 3),
        check_sizes(70, 200, 128),  # K a multiple of every form's step: the unmasked reduction
        check_sizes(0, 216, 32),
        check_refusals(),
        check_dense_layers(),
        check_cross_ab(),
    ]
    if args.scratch_path is not None:
        results.append(check_stand_in_auc(args.scratch_path))
    sys.exit(0 if all(results) else 1)
