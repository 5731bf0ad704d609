"""BERT's encoder on the GPU in torch, built from a torch BERT engine's weights (`engine.py`).

The computation is the post-LayerNorm BERT of the ONNX model, in the engine's precision:
embeddings (word + position + token type) and LayerNorm; per layer one fused query/key/value
projection, scaled dot-product attention (torch's SDPA: a fused kernel, the padding as an additive
(1 - mask) * -10000 bias as in the model), the output projection, residual and LayerNorm, the
feed-forward block with GELU, residual and LayerNorm; then the span head. Logits come back as
float32.

What runs between the GEMMs is the encoder's `fusion` (FUSIONS; measured by
benchmarks/bert/encoder_variants.py, figures in docs/performance.md):
  none           cuBLAS GEMMs with their bias, then separate passes: exact (erf) GELU, each residual
                 add, each LayerNorm;
  gelu           the feed-forward GEMM applies bias and GELU in its cuBLASLt epilogue
                 (`_addmm_activation`: on CUDA the tanh approximation of GELU, as NVIDIA's TensorRT
                 plugin computes it; within fp16's rounding of erf's);
  gelu+residual  also the residual added by the GEMM itself (`addmm(residual, ...)`), the output
                 biases carried by the stream instead (bias_folding.py): no add pass at all.

A call takes the packed sample rows the harness stores ([B, 3 * 384] int32: token ids, mask and
segment ids side by side) and a sequence length S: only the first S tokens of each row are computed.
Every sample of a call must have its real length <= S (the runner groups samples by length bucket),
so the answer equals the full-length model's on those tokens: padding never reaches a real token.
`varlen` takes a batch's real tokens concatenated instead, without padding
(backends/torch_cuda/varlen_batches.py), attention bounded per sequence.

torch is passed in, never imported here at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.engines.torch_bert.bias_folding import fold_output_biases
from mlperf_harness.engines.torch_bert.engine import EngineHeader
from mlperf_harness.errors import HarnessError

SEQ_LENGTH = 384  # the width of each packed input in a sample row
MASK_PENALTY = -10000.0  # BERT's additive attention mask for padding
LAYER_NORM_EPSILON = 1e-12
TORCH_DTYPES = {"fp16": "float16", "fp32": "float32"}
FUSIONS = ("none", "gelu", "gelu+residual")
DEFAULT_FUSION = "gelu+residual"


@dataclass(frozen=True)
class _Layer:
    """One layer's tensors; a weight is [out, in] (torch's linear), `out_bias` and `ffn_out_bias`
    None where the stream carries them (gelu+residual)."""

    qkv: Any
    qkv_bias: Any
    out: Any
    out_bias: Any
    ln1: tuple[Any, Any]
    ffn_in: Any
    ffn_in_bias: Any
    ffn_out: Any
    ffn_out_bias: Any
    ln2: tuple[Any, Any]


class BertEncoder:
    """The encoder's tensors on one GPU; calling it runs the whole model on the current stream."""

    def __init__(
        self,
        torch: Any,
        header: EngineHeader,
        arrays: Mapping[str, npt.NDArray[Any]],
        device: Any,
        fusion: str = DEFAULT_FUSION,
    ) -> None:
        if fusion not in FUSIONS:
            raise HarnessError(f"BERT encoder fusion {fusion!r}: one of {', '.join(FUSIONS)}")
        self._torch = torch
        self._f = torch.nn.functional
        self.header = header
        self.fusion = fusion
        dtype = getattr(torch, TORCH_DTYPES[header.precision])
        self.dtype = dtype
        folded = fusion == "gelu+residual"
        if folded:
            arrays = fold_output_biases(arrays, header.layers)

        def tensor(array: npt.NDArray[Any]) -> Any:
            return torch.from_numpy(np.ascontiguousarray(array)).to(device=device, dtype=dtype)

        def linear(name: str) -> Any:  # stored as x @ W ([in, out]); torch's linear takes [out, in]
            return tensor(np.ascontiguousarray(arrays[name].T))

        def norm(prefix: str) -> tuple[Any, Any]:
            return tensor(arrays[f"{prefix}/gamma"]), tensor(arrays[f"{prefix}/beta"])

        self.word = tensor(arrays["embeddings/word"])
        self.position = tensor(arrays["embeddings/position"][:SEQ_LENGTH])
        self.token_type = tensor(arrays["embeddings/token_type"])
        self.embeddings_ln = norm("embeddings/ln")
        self.layers = []
        for layer in range(header.layers):
            p = f"layer{layer}"
            names = ("query", "key", "value")
            qkv = np.concatenate([arrays[f"{p}/attention/{n}/weight"] for n in names], axis=1)
            qkv_bias = np.concatenate([arrays[f"{p}/attention/{n}/bias"] for n in names])
            self.layers.append(
                _Layer(
                    qkv=tensor(np.ascontiguousarray(qkv.T)),
                    qkv_bias=tensor(qkv_bias),
                    out=linear(f"{p}/attention/output/weight"),
                    out_bias=None if folded else tensor(arrays[f"{p}/attention/output/bias"]),
                    ln1=norm(f"{p}/attention/ln"),
                    ffn_in=linear(f"{p}/ffn/in/weight"),
                    ffn_in_bias=tensor(arrays[f"{p}/ffn/in/bias"]),
                    ffn_out=linear(f"{p}/ffn/out/weight"),
                    ffn_out_bias=None if folded else tensor(arrays[f"{p}/ffn/out/bias"]),
                    ln2=norm(f"{p}/ffn/ln"),
                )
            )
        self.span = linear("span/weight")  # [2, hidden]
        self.span_bias = tensor(arrays["span/bias"])

    def _layer_norm(self, x: Any, params: tuple[Any, Any]) -> Any:
        return self._f.layer_norm(x, (self.header.hidden,), *params, eps=LAYER_NORM_EPSILON)

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
        x = self._layer_norm(x, self.embeddings_ln).reshape(batch * seq, h.hidden)
        bias = ((1 - mask).to(self.dtype) * MASK_PENALTY).view(batch, 1, 1, seq)
        head_size = h.hidden // h.heads
        for layer in self.layers:
            qkv = f.linear(x, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.view(batch, seq, 3, h.heads, head_size).permute(2, 0, 3, 1, 4)
            context = f.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            x = self._after_attention(
                x, context.transpose(1, 2).reshape(batch * seq, h.hidden), layer
            )
        logits = f.linear(x, self.span, self.span_bias).float()
        return logits.view(batch, seq, 2)

    def varlen(
        self, ids: Any, segments: Any, positions: Any, cu_seqlens: Any, max_length: int
    ) -> Any:
        """Concatenated tokens ([tokens] ids, segment ids and positions in their sequence;
        sequences bounded by `cu_seqlens`, int32 [sequences + 1]; varlen_batches.py) -> [tokens, 2]
        float32 start and end logits: the padded call's logits at the real tokens, without the
        padding."""
        f, h = self._f, self.header
        x = (
            f.embedding(ids, self.word)
            + f.embedding(positions, self.position)
            + f.embedding(segments, self.token_type)
        )
        x = self._layer_norm(x, self.embeddings_ln)
        tokens, head_size = x.shape[0], h.hidden // h.heads
        for layer in self.layers:
            qkv = f.linear(x, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.view(tokens, 3, h.heads, head_size).unbind(1)
            context = varlen_attention(q, k, v, cu_seqlens, max_length)
            x = self._after_attention(x, context.reshape(tokens, h.hidden), layer)
        return f.linear(x, self.span, self.span_bias).float()

    def _after_attention(self, x: Any, context: Any, layer: _Layer) -> Any:
        """A layer past its attention, on [tokens, hidden] (the same per token, padded or
        concatenated): the output projection, residual and LayerNorm, the feed-forward block,
        residual and LayerNorm, each as the encoder's fusion runs it."""
        torch, f = self._torch, self._f
        if layer.out_bias is None:  # the stream carries the bias: cuBLAS adds the residual
            y = torch.addmm(x, context, layer.out.t())
        else:
            y = x + f.linear(context, layer.out, layer.out_bias)
        x = self._layer_norm(y, layer.ln1)
        if self.fusion == "none":
            inner = f.gelu(f.linear(x, layer.ffn_in, layer.ffn_in_bias))
        else:
            inner = torch._addmm_activation(layer.ffn_in_bias, x, layer.ffn_in.t(), use_gelu=True)
        if layer.ffn_out_bias is None:
            y = torch.addmm(x, inner, layer.ffn_out.t())
        else:
            y = x + f.linear(inner, layer.ffn_out, layer.ffn_out_bias)
        return self._layer_norm(y, layer.ln2)


def varlen_attention(q: Any, k: Any, v: Any, cu_seqlens: Any, max_length: int) -> Any:
    """Attention of concatenated [tokens, heads, head_dim] tensors within each sequence of
    `cu_seqlens` (int32, [sequences + 1]). On a GPU FlashAttention's variable-length kernel (torch's
    own `_flash_attention_forward`, the op behind its nested-tensor SDPA: present in every torch 2.x
    CUDA build, where the public `varlen_attn` wrapper is younger); elsewhere SDPA per sequence, the
    reference the CPU tests compare the varlen encoder with."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    if q.is_cuda:
        return torch.ops.aten._flash_attention_forward(
            q, k, v, cu_seqlens, cu_seqlens, max_length, max_length, 0.0, False, False
        )[0]
    bounds = cu_seqlens.tolist()
    pieces = [
        torch.nn.functional.scaled_dot_product_attention(
            q[start:end].transpose(0, 1), k[start:end].transpose(0, 1), v[start:end].transpose(0, 1)
        ).transpose(0, 1)
        for start, end in itertools.pairwise(bounds)
    ]
    return torch.cat(pieces)
