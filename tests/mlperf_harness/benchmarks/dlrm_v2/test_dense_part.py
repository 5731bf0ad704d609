"""DLRM-v2's dense part in torch (dense_part.py), as the torch runner computes it after the pooled
lookups, run on the CPU: FP8's layers are built for the real widths (and those _scaled_mm can
take), its products are the dequantized weights' (the CPU's path: the GPU's numbers up to the
activations' per-row rounding), and (slow) the small stand-in's held-out AUC with its tables
pooled by the runner's StackedTables and the dense part in fp32, fp16 and fp8, held to MLCommons'
rule (DLRM-v2-99: at least 99% of the reference's AUC; DLRM-v2-99.9: 99.9%). Skipped where torch
is not installed (CI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch_needed import needs_torch

pytestmark = needs_torch

# MLCommons' accuracy targets for DLRM-v2 (the fraction of the reference's AUC): -99 and -99.9.
TARGET_99, TARGET_99_9 = 0.99, 0.999


def test_fp8_layers_are_built_for_the_real_widths() -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import (
        SCALED_MM_MULTIPLE,
        DenseLayers,
        fp8_layer_names,
    )
    from mlperf_harness.benchmarks.dlrm_v2.topology import REAL

    layers = DenseLayers(initial_weights(REAL, (), 0), REAL, torch.device("cpu"), "fp8").layers()
    fp8 = fp8_layer_names(REAL)
    assert set(layers) - set(fp8) == {"bottom/0", "top/4"}  # 13 inputs; one output
    widths = {  # [out, in] of every FP8 layer at the real size
        "bottom/1": (256, 512), "bottom/2": (128, 256),
        **{f"cross/{i}/v": (512, 3456) for i in range(3)},
        **{f"cross/{i}/w": (3456, 512) for i in range(3)},
        "top/0": (1024, 3456), "top/1": (1024, 1024), "top/2": (512, 1024), "top/3": (256, 512),
    }  # fmt: skip
    assert set(widths) == set(fp8)
    for name, shape in widths.items():
        linear = layers[name]
        assert linear.weight8.dtype == torch.float8_e4m3fn and tuple(linear.weight8.shape) == shape
        assert linear.scale.shape == (shape[0],) and linear.scale.dtype == torch.float32
        assert all(width % SCALED_MM_MULTIPLE == 0 for width in shape)
        assert linear.scaled_mm is False  # the CPU: dequantized products
    assert layers["bottom/0"].weight8 is None and layers["bottom/0"].weight.dtype == torch.float16
    assert tuple(layers["top/4"].weight.shape) == (1, 256)


def test_fp8_products_are_the_dequantized_weights() -> None:
    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers
    from mlperf_harness.benchmarks.dlrm_v2.topology import REAL

    widths = REAL.reduced(8)
    weights = initial_weights(widths, (), 3)
    cpu = torch.device("cpu")
    fp32 = DenseLayers(weights, widths, cpu, "fp32")
    fp8 = DenseLayers(weights, widths, cpu, "fp8")
    layer = fp8.layers()["cross/1/w"]
    want = torch.from_numpy(weights["cross/1/w"]).t()
    # e4m3: 3 mantissa bits, so half a step is at most 1/16 of the value; below the smallest
    # normal (2^-6 of the scale's unit) the steps are 2^-9 of it
    bound = want.abs() / 16 + layer.scale[:, None] * 2.0**-10
    assert bool(((layer.dequantized(torch, torch.float32) - want).abs() <= bound).all())
    rng = np.random.default_rng(0)
    dense = torch.from_numpy(rng.normal(0, 1, (64, 13)).astype(np.float32))
    pooled = torch.from_numpy(rng.normal(0, 0.3, (64, 26 * widths.embedding)).astype(np.float32))
    p32, p8 = fp32.probability(dense, pooled), fp8.probability(dense, pooled)
    assert p8.dtype == torch.float32 and p8.shape == (64,)
    assert float((p8 - p32).abs().max()) < 0.05 and not torch.equal(p8, p32)


def test_a_relu_in_the_products_epilogue_is_the_relu_after_it() -> None:
    """relu_product: fp32 and fp16 products with a bias take the ReLU in the product (the same
    numbers as a ReLU after it); an FP8 layer takes it after its own product."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers, relu_product
    from mlperf_harness.benchmarks.dlrm_v2.topology import REAL

    widths = REAL.reduced(8)
    weights = initial_weights(widths, (), 1)
    x = torch.from_numpy(np.random.default_rng(1).normal(0, 1, (33, 64)).astype(np.float32))
    for precision in ("fp32", "fp16", "fp8"):
        layers = DenseLayers(weights, widths, torch.device("cpu"), precision)
        layer, inputs = layers.layers()["bottom/1"], x.to(layers.dtype)
        got = relu_product(torch, layer, inputs)
        assert torch.equal(got, torch.relu(layer(torch, inputs))), precision
        assert bool((got == 0).any()) and bool((got > 0).any())


@pytest.mark.slow
def test_the_stand_ins_auc_in_fp8_meets_the_99_9_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlperf_harness.benchmarks.dlrm_v2 import dense_auc

    assert dense_auc.main(["--scratch_path", str(tmp_path)]) == 0
    line = capsys.readouterr().out
    auc = {
        p: float(line.split(f"{p} ")[1].split(",")[0].split(" ")[0])
        for p in ("fp32", "fp16", "fp8")
    }
    reference = float(line.split("reference ")[1].split(")")[0])
    assert reference > 0.7 and abs(auc["fp32"] - reference) < 1e-3, line
    assert auc["fp16"] >= TARGET_99_9 * reference, line
    assert auc["fp8"] >= TARGET_99_9 * reference, line


def test_the_cross_kernel_is_refused_where_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """--cross kernel: on the CPU without Triton's interpreter, and with FP8 weights, one line."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers
    from mlperf_harness.benchmarks.dlrm_v2.topology import REAL
    from mlperf_harness.errors import HarnessError

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    widths = REAL.reduced(16)
    weights = initial_weights(widths, (), 0)
    cpu = torch.device("cpu")
    for precision, says in (
        (
            "fp16",
            "--cross kernel runs on a CUDA GPU (or the CPU under TRITON_INTERPRET=1), not on cpu",
        ),
        ("fp8", "runs the fp16 dense part, not --precision fp8"),
    ):
        with pytest.raises(HarnessError) as raised:
            DenseLayers(weights, widths, cpu, precision, cross="kernel")
        assert says in str(raised.value) and "\n" not in str(raised.value)
    assert DenseLayers(weights, widths, cpu, "fp16", cross="torch").cross_way == "torch"
