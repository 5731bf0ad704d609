"""GPT-J's weights by the checkpoint's names, from where they come: the stand-in's ONNX graph (what
the CPU engine runs, so both engines decode one model), a Hugging Face state dict (the official
checkpoint, through `checkpoint_layout`, which refuses another layout in one line), or seeded
random values at GPT-J 6B's size made directly on the GPU (`module.random_gptj`).

The stand-in graph stores each Linear's weight transposed as `<name>.weight_t` ([in, out], as
MatMul takes it) and everything else under its own name; the sizes GptjShape needs are read from the
graph: layers and widths from the tensors, heads from each block's head split, rotary_dim from the
rotary cos table (the head's dims past rotary_dim carry cos 1 at every position).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

from mlperf_harness.benchmarks.gptj.checkpoint_layout import builder_weights
from mlperf_harness.benchmarks.gptj.stand_in_model import (
    Float32Array,
    GptjShape,
    check_weights,
    weight_shapes,
)
from mlperf_harness.errors import HarnessError

_BLOCK = re.compile(r"transformer\.h\.(\d+)\.")


def stand_in_weights(model: onnx.ModelProto) -> tuple[dict[str, Float32Array], GptjShape]:
    """The weights and shape of a GPT-J graph written by `stand_in_model.gptj_model`."""
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    if "transformer.wte.weight" not in tensors:
        raise HarnessError("the ONNX model is not a GPT-J stand-in: no transformer.wte.weight")
    vocab, hidden = tensors["transformer.wte.weight"].shape
    blocks = {int(m.group(1)) for name in tensors if (m := _BLOCK.match(name))}
    layers = len(blocks)
    if blocks != set(range(layers)) or not layers:
        raise HarnessError(f"the ONNX model's GPT-J blocks are not 0..n-1: {sorted(blocks)}")
    split = tensors.get("transformer.h.0.attn/split")
    cos = tensors.get("rotary.cos")
    fc_in = tensors.get("transformer.h.0.mlp.fc_in.weight_t")
    if split is None or cos is None or fc_in is None:
        raise HarnessError("the ONNX model is not a GPT-J stand-in: no head split, rotary or MLP")
    heads = int(split[2])
    rotary_dim = int(np.count_nonzero(np.any(cos != 1.0, axis=0)))
    shape = GptjShape(
        layers=layers,
        hidden=int(hidden),
        heads=heads,
        rotary_dim=rotary_dim,
        vocab_size=int(vocab),
        inner=int(fc_in.shape[1]),
        max_positions=int(cos.shape[0]),
    )
    shape.check()
    weights: dict[str, Float32Array] = {}
    for name in weight_shapes(shape):
        if name in tensors:
            weights[name] = np.asarray(tensors[name], np.float32)
        elif name.endswith(".weight") and f"{name}_t" in tensors:
            weights[name] = np.ascontiguousarray(np.asarray(tensors[f"{name}_t"], np.float32).T)
        else:
            raise HarnessError(f"the ONNX model is not a GPT-J stand-in of {shape}: no {name}")
    check_weights(weights, shape)
    return weights, shape


def checkpoint_weights(
    state: Mapping[str, npt.NDArray[Any]], shape: GptjShape, source: str
) -> dict[str, Float32Array]:
    """A Hugging Face GPT-J state dict (the official checkpoint's tensors as arrays), checked
    against GPT-J's layout at `shape` (one line naming the first mismatch)."""
    return builder_weights(state, shape, source)
