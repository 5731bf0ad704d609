"""BERT's encoder on the GPU in torch, built from a torch BERT engine's weights (`engine.py`).

The computation is the post-LayerNorm BERT of the ONNX model, in the engine's precision:
embeddings (word + position + token type) and LayerNorm; per layer one fused query/key/value
projection, scaled dot-product attention (torch's SDPA: a fused kernel, the padding as an additive
(1 - mask) * -10000 bias as in the model), the output projection, residual and LayerNorm, the
feed-forward block with exact (erf) GELU, residual and LayerNorm; then the span head. Logits come
back as float32.

A call takes the packed sample rows the harness stores ([B, 3 * 384] int32: token ids, mask and
segment ids side by side) and a sequence length S: only the first S tokens of each row are computed.
Every sample of a call must have its real length <= S (the runner groups samples by length bucket),
so the answer equals the full-length model's on those tokens: padding never reaches a real token.

torch is passed in, never imported here at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.engines.torch_bert.engine import EngineHeader

SEQ_LENGTH = 384  # the width of each packed input in a sample row
MASK_PENALTY = -10000.0  # BERT's additive attention mask for padding
LAYER_NORM_EPSILON = 1e-12
TORCH_DTYPES = {"fp16": "float16", "fp32": "float32"}


class BertEncoder:
    """The encoder's tensors on one GPU; calling it runs the whole model on the current stream."""

    def __init__(
        self, torch: Any, header: EngineHeader, arrays: Mapping[str, npt.NDArray[Any]], device: Any
    ) -> None:
        self._torch = torch
        self._f = torch.nn.functional
        self.header = header
        dtype = getattr(torch, TORCH_DTYPES[header.precision])
        self.dtype = dtype

        def tensor(array: npt.NDArray[Any]) -> Any:
            return torch.from_numpy(np.ascontiguousarray(array)).to(device=device, dtype=dtype)

        def linear(name: str) -> Any:  # stored as x @ W ([in, out]); torch's linear takes [out, in]
            return tensor(np.ascontiguousarray(arrays[name].T))

        self.word = tensor(arrays["embeddings/word"])
        self.position = tensor(arrays["embeddings/position"][:SEQ_LENGTH])
        self.token_type = tensor(arrays["embeddings/token_type"])
        self.embeddings_ln = (
            tensor(arrays["embeddings/ln/gamma"]),
            tensor(arrays["embeddings/ln/beta"]),
        )
        self.layers = []
        for layer in range(header.layers):
            p = f"layer{layer}"
            qkv = np.concatenate(
                [arrays[f"{p}/attention/{n}/weight"] for n in ("query", "key", "value")], axis=1
            )
            qkv_bias = np.concatenate(
                [arrays[f"{p}/attention/{n}/bias"] for n in ("query", "key", "value")]
            )
            self.layers.append(
                {
                    "qkv": tensor(np.ascontiguousarray(qkv.T)),
                    "qkv_bias": tensor(qkv_bias),
                    "out": linear(f"{p}/attention/output/weight"),
                    "out_bias": tensor(arrays[f"{p}/attention/output/bias"]),
                    "ln1": (
                        tensor(arrays[f"{p}/attention/ln/gamma"]),
                        tensor(arrays[f"{p}/attention/ln/beta"]),
                    ),
                    "ffn_in": linear(f"{p}/ffn/in/weight"),
                    "ffn_in_bias": tensor(arrays[f"{p}/ffn/in/bias"]),
                    "ffn_out": linear(f"{p}/ffn/out/weight"),
                    "ffn_out_bias": tensor(arrays[f"{p}/ffn/out/bias"]),
                    "ln2": (
                        tensor(arrays[f"{p}/ffn/ln/gamma"]),
                        tensor(arrays[f"{p}/ffn/ln/beta"]),
                    ),
                }
            )
        self.span = linear("span/weight")  # [2, hidden]
        self.span_bias = tensor(arrays["span/bias"])
        self._layer: Callable[..., Any] = _encoder_layer  # compile_layers() swaps in its own

    def _layer_norm(self, x: Any, params: tuple[Any, Any]) -> Any:
        return self._f.layer_norm(x, (self.header.hidden,), *params, eps=LAYER_NORM_EPSILON)

    def compile_layers(self) -> None:
        """Run the encoder layer through torch.compile (Inductor, shapes dynamic): one compiled
        layer serves all 24 and every bucket and batch, its bias, GELU, residual and LayerNorm
        passes fused into fewer kernels around cuBLAS's GEMMs. Compiles on the first call."""
        self._layer = self._torch.compile(_encoder_layer, dynamic=True, fullgraph=True)

    def __call__(self, packed: Any, seq: int) -> Any:
        """[B, 3 * 384] int32 sample rows -> [B, seq, 2] float32 start and end logits."""
        f, h = self._f, self.header
        batch = packed.shape[0]
        ids = packed[:, :seq]
        mask = packed[:, SEQ_LENGTH : SEQ_LENGTH + seq]
        segments = packed[:, 2 * SEQ_LENGTH : 2 * SEQ_LENGTH + seq]
        x = (
            f.embedding(ids, self.word)
            + self.position[:seq]
            + f.embedding(segments, self.token_type)
        )
        x = self._layer_norm(x, self.embeddings_ln)
        bias = ((1 - mask).to(self.dtype) * MASK_PENALTY).view(batch, 1, 1, seq)
        for layer in self.layers:
            x = self._layer(
                x, bias, h.heads, layer["qkv"], layer["qkv_bias"], layer["out"], layer["out_bias"],
                *layer["ln1"], layer["ffn_in"], layer["ffn_in_bias"], layer["ffn_out"],
                layer["ffn_out_bias"], *layer["ln2"],
            )  # fmt: skip
        return f.linear(x, self.span, self.span_bias).float()


def _encoder_layer(
    x: Any, bias: Any, heads: int, qkv_w: Any, qkv_b: Any, out_w: Any, out_b: Any,
    ln1_g: Any, ln1_b: Any, ffn_in_w: Any, ffn_in_b: Any, ffn_out_w: Any, ffn_out_b: Any,
    ln2_g: Any, ln2_b: Any,
) -> Any:  # fmt: skip
    """One post-LayerNorm BERT layer; weights are arguments so that one compiled layer serves all."""
    import torch.nn.functional as f  # type: ignore[import-not-found]  # pants: no-infer-dep

    batch, seq, hidden = x.shape
    qkv = f.linear(x, qkv_w, qkv_b)
    q, k, v = qkv.view(batch, seq, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
    context = f.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    context = context.transpose(1, 2).reshape(batch, seq, hidden)
    x = f.layer_norm(
        x + f.linear(context, out_w, out_b), (hidden,), ln1_g, ln1_b, LAYER_NORM_EPSILON
    )
    y = f.gelu(f.linear(x, ffn_in_w, ffn_in_b))
    return f.layer_norm(
        x + f.linear(y, ffn_out_w, ffn_out_b), (hidden,), ln2_g, ln2_b, LAYER_NORM_EPSILON
    )
