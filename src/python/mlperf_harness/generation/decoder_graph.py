"""What every decoder stand-in's ONNX graph with a KV cache shares (GPT-J's and Llama's): the
interface's names, the check of the weights by name, the causal mask with padding, rotary embedding
applied as x * cos + (x @ R) * sin, the linear layers, the graph's outputs and the checked model;
and for their reference forwards, the mask as NumPy, the softmax, the cache and the frame that runs
the blocks.

The interface (Hugging Face's ONNX export of a decoder with past): inputs `input_ids` [batch, new],
`position_ids` [batch, new], `attention_mask` [batch, past + new] (1 = attend) and per layer
`past_key_values.{i}.key` / `.value` [batch, kv_heads, past, head_dim]; outputs `logits` [batch,
new, vocab] and `present.{i}.key` / `.value` [batch, kv_heads, past + new, head_dim].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

from mlperf_harness.errors import HarnessError
from mlperf_harness.onnx_model import GraphWriter, make_model

Float32Array = npt.NDArray[np.float32]
# A layer's keys and values, each [batch, kv_heads, n, head_dim].
KeyValue = tuple[Float32Array, Float32Array]

INPUT_IDS, POSITION_IDS, ATTENTION_MASK = "input_ids", "position_ids", "attention_mask"
LOGITS = "logits"
# Added to the scores of masked keys. Finite, so a row with every key masked (a padded query)
# gives a uniform softmax instead of NaN; the same value in the graphs and the NumPy forwards.
MASK_VALUE = -1e9


def past_key(layer: int) -> str:
    return f"past_key_values.{layer}.key"


def past_value(layer: int) -> str:
    return f"past_key_values.{layer}.value"


def present_key(layer: int) -> str:
    return f"present.{layer}.key"


def present_value(layer: int) -> str:
    return f"present.{layer}.value"


def attention_bias(attention_mask: npt.NDArray[np.int64], new: int) -> npt.NDArray[np.float32]:
    """[batch, 1, new, past + new]: 0 where a query may attend a key, MASK_VALUE elsewhere."""
    total = attention_mask.shape[1]
    past = total - new
    causal = np.arange(total)[None, :] <= (past + np.arange(new))[:, None]
    allowed = causal[None, None] & (attention_mask[:, None, None, :] != 0)
    return np.where(allowed, np.float32(0), np.float32(MASK_VALUE)).astype(np.float32)


def check_weights(
    weights: Mapping[str, npt.NDArray[Any]], shapes: Mapping[str, tuple[int, ...]], family: str
) -> None:
    """Every weight `shapes` names is in `weights`, of its shape; else one line naming it."""
    for name, dims in shapes.items():
        if name not in weights:
            raise HarnessError(f"{family} weights lack {name}")
        if tuple(weights[name].shape) != dims:
            raise HarnessError(
                f"{family} weight {name} is {tuple(weights[name].shape)}, not {dims}"
            )


@dataclass
class Forward:
    """What a NumPy reference forward returns; `hidden` holds each block's input and the final
    norm's input."""

    logits: npt.NDArray[np.float32]  # [batch, new, vocab]
    presents: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]]  # per layer (k, v)
    hidden: list[npt.NDArray[np.float32]]


def run_blocks(
    x: Float32Array,
    layers: int,
    block: Callable[[int, Float32Array], tuple[Float32Array, KeyValue]],
    head: Callable[[Float32Array], Float32Array],
    upto: int | None,
) -> Forward:
    """A reference forward's frame: the embedded new tokens `x` [batch, new, hidden] through each
    `block(i, x)` (the block's output and its layer's presents), then `head(x)`, the logits. With
    `upto`, only the input of block `upto` is computed (hidden[upto]; no logits): what a fit of that
    block needs."""
    batch, new = x.shape[:2]
    presents: list[KeyValue] = []
    hidden = []
    for i in range(layers):
        hidden.append(x)
        if i == upto:
            return Forward(np.zeros((batch, new, 0), np.float32), presents, hidden)
        x, present = block(i, x)
        presents.append(present)
    hidden.append(x)
    if upto == layers:
        return Forward(np.zeros((batch, new, 0), np.float32), presents, hidden)
    return Forward(head(x).astype(np.float32), presents, hidden)


def with_past(
    k: Float32Array, v: Float32Array, past: Sequence[KeyValue] | None, layer: int
) -> KeyValue:
    """The new tokens' keys and values after the layer's past ones, if any: its presents."""
    if past is None:
        return k, v
    return np.concatenate([past[layer][0], k], axis=2), np.concatenate([past[layer][1], v], axis=2)


def softmax(scores: Float32Array) -> Float32Array:
    """Over the last axis, in float32."""
    scores = scores - scores.max(-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(-1, keepdims=True)
    return probs


def cache_io(
    layers: int, kv_heads: int, head_dim: int, vocab_size: int
) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """The graph's inputs and outputs (the module docstring)."""
    cache: list[str | int] = ["batch", kv_heads, "past", head_dim]
    present: list[str | int] = ["batch", kv_heads, "total", head_dim]
    inputs = [
        helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "new"]),
        helper.make_tensor_value_info(POSITION_IDS, TensorProto.INT64, ["batch", "new"]),
        helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64, ["batch", "total"]),
    ]
    outputs = [
        helper.make_tensor_value_info(LOGITS, TensorProto.FLOAT, ["batch", "new", vocab_size])
    ]
    for i in range(layers):
        inputs += [
            helper.make_tensor_value_info(past_key(i), TensorProto.FLOAT, cache),
            helper.make_tensor_value_info(past_value(i), TensorProto.FLOAT, cache),
        ]
        outputs += [
            helper.make_tensor_value_info(present_key(i), TensorProto.FLOAT, present),
            helper.make_tensor_value_info(present_value(i), TensorProto.FLOAT, present),
        ]
    return inputs, outputs


class DecoderGraphWriter(GraphWriter):
    """The layers a decoder graph is written with; each architecture adds its blocks."""

    def linear(self, x: str, name: str, bias: bool) -> str:
        """x @ W.T (+ b): the initializer holds W transposed, [in, out], as MatMul wants it."""
        w = self.constant(
            f"{name}.weight_t", np.ascontiguousarray(self.weights[f"{name}.weight"].T)
        )
        y = self.node("MatMul", [x, w], f"{name}/matmul")
        if bias:
            y = self.node(
                "Add",
                [y, self.constant(f"{name}.bias", self.weights[f"{name}.bias"])],
                f"{name}/add",
            )
        return y

    def embed(self, name: str, output: str = "wte") -> str:
        return self.node("Gather", [self.constant(name, self.weights[name]), INPUT_IDS], output)

    def rotary_inputs(
        self, tables: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
    ) -> tuple[str, str]:
        """cos and sin of each new token's position, [batch, new, 1, head_dim]."""
        cos_table, sin_table = tables
        axis2 = self.constant("axes2", np.array([2], np.int64))
        cos = self.node(
            "Gather", [self.constant("rotary.cos", cos_table), POSITION_IDS], "cos/gather"
        )
        sin = self.node(
            "Gather", [self.constant("rotary.sin", sin_table), POSITION_IDS], "sin/gather"
        )
        return (
            self.node("Unsqueeze", [cos, axis2], "cos"),
            self.node("Unsqueeze", [sin, axis2], "sin"),
        )

    def rotary(self, y: str, rotate: str, cos: str, sin: str, prefix: str) -> str:
        """y * cos + (y @ R) * sin: R the architecture's signed permutation of a head's dims."""
        turned = self.node("MatMul", [y, rotate], f"{prefix}/turned")
        return self.node(
            "Add",
            [
                self.node("Mul", [y, cos], f"{prefix}/xcos"),
                self.node("Mul", [turned, sin], f"{prefix}/rsin"),
            ],
            f"{prefix}/rotary",
        )

    def mask_bias(self) -> str:
        """[batch, 1, new, total]: 0 where a new token may attend a key, MASK_VALUE elsewhere
        (causal over past + new, and the attention mask's padding)."""
        # Causal over [past + new]: key k is visible to new token q when k <= past + q.
        zero = self.constant("i0", np.array(0, np.int64))
        one = self.constant("i1", np.array(1, np.int64))
        total = self.node(
            "Gather", [self.node("Shape", [ATTENTION_MASK], "mask/shape"), one], "mask/total"
        )
        new = self.node("Gather", [self.node("Shape", [INPUT_IDS], "ids/shape"), one], "ids/new")
        past = self.node("Sub", [total, new], "mask/past")
        keys = self.node("Range", [zero, total, one], "mask/keys")
        queries = self.node(
            "Add", [self.node("Range", [zero, new, one], "mask/q"), past], "mask/queries"
        )
        axis1 = self.constant("axes1", np.array([1], np.int64))
        causal = self.node(
            "LessOrEqual",
            [keys, self.node("Unsqueeze", [queries, axis1], "mask/qcol")],
            "mask/causal",
        )  # [new, total]
        axes12 = self.constant("axes12", np.array([1, 2], np.int64))
        padding = self.node(
            "Cast",
            [self.node("Unsqueeze", [ATTENTION_MASK, axes12], "mask/unsq")],
            "mask/bool",
            to=TensorProto.BOOL,
        )  # [batch, 1, 1, total]
        allowed = self.node("And", [causal, padding], "mask/allowed")
        return self.node(
            "Where",
            [
                allowed,
                self.constant("mask/zero", np.array(0.0, np.float32)),
                self.constant("mask/value", np.array(MASK_VALUE, np.float32)),
            ],
            "mask/bias",
        )

    def merge_heads(self, context: str, hidden: int, out_proj: str, prefix: str) -> str:
        """[batch, heads, new, head_dim] -> [batch, new, hidden] -> the output projection."""
        merged = self.constant(f"{prefix}/merged", np.array([0, 0, hidden], np.int64))
        context = self.node("Transpose", [context], f"{prefix}/context/bshd", perm=[0, 2, 1, 3])
        context = self.node("Reshape", [context, merged], f"{prefix}/context/merged")
        return self.linear(context, out_proj, bias=False)

    def finish_graph(
        self, logits: str, name: str, layers: int, kv_heads: int, head_dim: int, vocab_size: int
    ) -> onnx.GraphProto:
        """The written nodes as the graph `name`, `logits` its output of that name."""
        self.node("Identity", [logits], LOGITS)
        inputs, outputs = cache_io(layers, kv_heads, head_dim, vocab_size)
        return helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)


def checked_model(
    graph: onnx.GraphProto, opset: int, doc: str, metadata: Mapping[str, str] | None
) -> onnx.ModelProto:
    model = make_model(graph, opset, doc=doc, metadata=metadata)
    onnx.checker.check_model(model)
    return model
