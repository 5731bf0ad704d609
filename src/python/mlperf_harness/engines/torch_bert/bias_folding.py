"""Move BERT's residual-branch output biases into the residual stream, so that cuBLAS adds the
residual in its GEMM epilogue (`addmm(residual, a, w)`) and no separate add pass remains.

A layer adds `x + (context @ W_out + b_out)`; `addmm` computes `C + A @ B` in one GEMM but has no
room for a bias besides C. So the stream entering the layer carries `b_out` already: the LayerNorm
that makes it (the embeddings' or the previous layer's last) gets `beta + b_out`, and every GEMM
that reads that stream for anything but the residual subtracts what the extra term adds:
`(x + b_out) @ W + (b - b_out @ W) = x @ W + b`. The same for the feed-forward block's `b_ffn_out`
through the attention block's LayerNorm. The last layer's stream feeds the span head unchanged.

numpy only, in fp32 before the weights are cast: the compensation is exact in fp32 and GEMMs add it
in their fp32 epilogue; what changes in fp16 is only that the stream is rounded with the bias in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

QKV = ("query", "key", "value")


def fold_output_biases(
    arrays: Mapping[str, npt.NDArray[Any]], layers: int
) -> dict[str, npt.NDArray[Any]]:
    """A copy of the engine's weights (names of weights.py, weights [in, out]) with every layer's
    `attention/output/bias` and `ffn/out/bias` moved into the stream as above (both zero after)."""
    folded = {name: np.asarray(array, dtype=np.float32) for name, array in arrays.items()}

    def carry(stream_beta: str, bias_name: str, readers: list[tuple[str, str]]) -> None:
        """The stream made by the LayerNorm of `stream_beta` carries `bias_name`: its readers
        ((weight, bias) pairs) compensate, and the bias itself becomes zero."""
        bias = folded[bias_name]
        folded[stream_beta] = folded[stream_beta] + bias
        for weight, reader_bias in readers:
            folded[reader_bias] = folded[reader_bias] - bias @ folded[weight]
        folded[bias_name] = np.zeros_like(bias)

    for layer in range(layers):
        p = f"layer{layer}"
        before = "embeddings/ln/beta" if layer == 0 else f"layer{layer - 1}/ffn/ln/beta"
        carry(
            before,
            f"{p}/attention/output/bias",
            [(f"{p}/attention/{n}/weight", f"{p}/attention/{n}/bias") for n in QKV],
        )
        carry(
            f"{p}/attention/ln/beta",
            f"{p}/ffn/out/bias",
            [(f"{p}/ffn/in/weight", f"{p}/ffn/in/bias")],
        )
    return folded
