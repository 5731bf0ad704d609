"""bias_folding: the residual branches' output biases moved into the stream, compensated exactly."""

from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.bert.stand_in_model import BertShape, random_weights
from mlperf_harness.engines.torch_bert.bias_folding import QKV, fold_output_biases

SHAPE = BertShape(layers=2, hidden=32, heads=2, intermediate=48, vocab_size=20)


def test_every_reader_of_the_stream_computes_what_it_did() -> None:
    rng = np.random.default_rng(0)
    weights = {
        name: (
            rng.standard_normal(a.shape, dtype=np.float32) if name.endswith(("bias", "beta")) else a
        )
        for name, a in random_weights(SHAPE, seed=1).items()
    }
    folded = fold_output_biases(weights, SHAPE.layers)
    x = rng.standard_normal((5, SHAPE.hidden), dtype=np.float32)  # a LayerNorm's output, unfolded
    for layer in range(SHAPE.layers):
        p = f"layer{layer}"
        before = "embeddings/ln/beta" if layer == 0 else f"layer{layer - 1}/ffn/ln/beta"
        carried = weights[f"{p}/attention/output/bias"]
        np.testing.assert_allclose(folded[before], weights[before] + carried, rtol=1e-6)
        for name in QKV:
            w, b = f"{p}/attention/{name}/weight", f"{p}/attention/{name}/bias"
            np.testing.assert_allclose(
                (x + carried) @ folded[w] + folded[b], x @ weights[w] + weights[b], atol=1e-4
            )
        carried = weights[f"{p}/ffn/out/bias"]
        beta = f"{p}/attention/ln/beta"
        np.testing.assert_allclose(folded[beta], weights[beta] + carried, rtol=1e-6)
        w, b = f"{p}/ffn/in/weight", f"{p}/ffn/in/bias"
        np.testing.assert_allclose(
            (x + carried) @ folded[w] + folded[b], x @ weights[w] + weights[b], atol=1e-4
        )
        assert not folded[f"{p}/attention/output/bias"].any()
        assert not folded[f"{p}/ffn/out/bias"].any()
    last = f"layer{SHAPE.layers - 1}/ffn/ln/beta"  # feeds the span head: unchanged
    np.testing.assert_array_equal(folded[last], weights[last])
    np.testing.assert_array_equal(folded["span/bias"], weights["span/bias"])
