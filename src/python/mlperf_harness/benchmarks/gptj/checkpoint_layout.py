"""The official GPT-J checkpoint's tensors onto the stand-in builder's weights, or one line saying
why not.

The stand-in's weights already carry Hugging Face's names and PyTorch's [out, in] layout
(`stand_in_model.weight_shapes`), so the mapping is the identity on names: what this module adds is
the check that a state dict IS that layout, at the size expected (GPT-J 6B's: 28 blocks, hidden
4096, 16 heads, vocabulary 50400, MLP 16384), before anything is built from it. A checkpoint of
another model, another size or another naming fails on its first mismatch, in one line.

Shapes cannot tell the head count or rotary_dim (16 and 64 for GPT-J 6B): those come from the
checkpoint's config.json (`shape_from_config`, which refuses a config of another model type), not
from the tensors. The checks take names alone (a shard index lists names, not shapes) or names with
shapes (a safetensors header, a loaded shard), so that a checkpoint is refused before 24 GB of it
is read.

Hugging Face's GPT-J checkpoints also hold each block's `attn.bias` (the causal mask, a buffer) and,
in older ones, `attn.masked_bias`; GPTJForCausalLM ignores them when loading, and so does this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
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
CONFIG_JSON = "config.json"
MODEL_TYPE = "gptj"  # Hugging Face's name for GPT-J's architecture in config.json


def builder_weights(
    state: Mapping[str, npt.NDArray[Any]], shape: GptjShape = GPTJ_6B, source: str = "checkpoint"
) -> dict[str, Float32Array]:
    """The builder's weights from a Hugging Face GPT-J state dict (name -> array), as float32.
    Raises HarnessError naming the first missing, misshapen or unknown tensor."""
    check_shapes({name: np.shape(value) for name, value in state.items()}, shape, source)
    return {name: np.asarray(state[name], dtype=np.float32) for name in weight_shapes(shape)}


def check_names(names: Iterable[str], shape: GptjShape, source: str) -> None:
    """Refuse, in one line, tensor names that are not GPT-J's at `shape`: the first missing or
    unknown one."""
    check_shapes(dict.fromkeys(names), shape, source)


def check_shapes(shapes: Mapping[str, Sequence[int] | None], shape: GptjShape, source: str) -> None:
    """Refuse, in one line, the first of GPT-J's tensors at `shape` that is missing or of another
    shape (None: not known, names only), then the first unknown one."""
    expected = weight_shapes(shape)
    for name, dims in expected.items():
        if name not in shapes:
            raise HarnessError(
                f"{source} is not GPT-J's layout: it has no tensor {name} {list(dims)}"
            )
        found = shapes[name]
        if found is not None and tuple(int(d) for d in found) != dims:
            raise HarnessError(
                f"{source} is not GPT-J's layout at {_describe(shape)}: {name} is "
                f"{[int(d) for d in found]}, expected {list(dims)}"
            )
    for name in sorted(shapes):
        if name not in expected and not IGNORED.fullmatch(name):
            raise HarnessError(f"{source} is not GPT-J's layout: unexpected tensor {name}")


def shape_from_config(directory: Path) -> GptjShape:
    """GPT-J's sizes from a Hugging Face checkpoint's config.json (GPTJConfig's field names); a
    config of another model type, or one without those sizes, is one line."""
    path = directory / CONFIG_JSON
    try:
        config = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise HarnessError(
            f"{directory} is not a Hugging Face checkpoint: it has no {CONFIG_JSON}"
        ) from None
    except OSError as error:
        raise HarnessError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise HarnessError(f"{path} is not JSON: {error}") from error
    if not isinstance(config, dict):
        raise HarnessError(f"{path} is not a JSON object")
    model_type = config.get("model_type")
    if model_type != MODEL_TYPE:
        raise HarnessError(
            f"{directory} is not a GPT-J checkpoint: {CONFIG_JSON}'s model_type is "
            f"{model_type!r}, not {MODEL_TYPE!r}"
        )

    def size(key: str, default: int | None = None) -> int:
        value = config.get(key, default)
        if value is None:
            value = default
        if not isinstance(value, int) or isinstance(value, bool):
            raise HarnessError(f"{path}: {key} is {value!r}, not a whole number")
        return value

    hidden = size("n_embd")
    shape = GptjShape(
        layers=size("n_layer"),
        hidden=hidden,
        heads=size("n_head"),
        rotary_dim=size("rotary_dim"),
        vocab_size=size("vocab_size"),
        inner=size("n_inner", 4 * hidden),  # GPTJConfig: None means 4 x n_embd
        max_positions=size("n_positions", 2048),
    )
    shape.check()
    return shape


def _describe(shape: GptjShape) -> str:
    return (
        f"{shape.layers} blocks, hidden {shape.hidden}, vocabulary {shape.vocab_size}, "
        f"MLP {shape.inner}"
    )
