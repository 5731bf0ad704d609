"""The official GPT-J checkpoint's tensors onto the stand-in builder's weights, or one line saying
why not.

The stand-in's weights already carry Hugging Face's names and PyTorch's [out, in] layout
(`stand_in_model.weight_shapes`), so the mapping is the identity on names: what this module adds is
the check that a state dict IS that layout, at the size expected (GPT-J 6B's: 28 blocks, hidden
4096, 16 heads, vocabulary 50400, MLP 16384), before anything is built from it. A checkpoint of
another model, another size or another naming fails on its first mismatch, in one line.

Shapes cannot tell the head count or rotary_dim (16 and 64 for GPT-J 6B): those come from the
checkpoint's config.json with the GptjShape, not from the tensors.

Hugging Face's GPT-J checkpoints also hold each block's `attn.bias` (the causal mask, a buffer) and,
in older ones, `attn.masked_bias`; GPTJForCausalLM ignores them when loading, and so does this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.gptj.stand_in_model import (
    GPTJ_6B,
    Float32Array,
    GptjShape,
    weight_shapes,
)
from mlperf_harness.errors import HarnessError

IGNORED = re.compile(r"transformer\.h\.\d+\.attn\.(bias|masked_bias)")


def builder_weights(
    state: Mapping[str, npt.NDArray[Any]], shape: GptjShape = GPTJ_6B, source: str = "checkpoint"
) -> dict[str, Float32Array]:
    """The builder's weights from a Hugging Face GPT-J state dict (name -> array), as float32.
    Raises HarnessError naming the first missing, misshapen or unknown tensor."""
    expected = weight_shapes(shape)
    for name, dims in expected.items():
        if name not in state:
            raise HarnessError(
                f"{source} is not GPT-J's layout: it has no tensor {name} {list(dims)}"
            )
        found = tuple(int(d) for d in np.shape(state[name]))
        if found != dims:
            raise HarnessError(
                f"{source} is not GPT-J's layout at {_describe(shape)}: {name} is {list(found)}, "
                f"expected {list(dims)}"
            )
    for name in state:
        if name not in expected and not IGNORED.fullmatch(name):
            raise HarnessError(f"{source} is not GPT-J's layout: unexpected tensor {name}")
    return {name: np.asarray(state[name], dtype=np.float32) for name in expected}


def _describe(shape: GptjShape) -> str:
    return (
        f"{shape.layers} blocks, hidden {shape.hidden}, vocabulary {shape.vocab_size}, "
        f"MLP {shape.inner}"
    )
