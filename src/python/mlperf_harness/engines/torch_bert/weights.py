"""BERT's weights read out of its ONNX model, under one set of names the torch engine builds from.

Two layouts are known: our stand-in's (`benchmarks/bert/stand_in_model.py`: `layer0/attention/query/
weight`...) and the TensorFlow checkpoint names the official BERT-Large model was converted from
(`bert/encoder/layer_0/attention/self/query/kernel`..., optionally with TensorFlow's `:0` suffix).
The TensorFlow names are those of Google's BERT checkpoints as NVIDIA's and others' weight loaders
read them; they were not checked against the official `model.onnx` here (it cannot be downloaded on
this machine): a model whose weights are under other names is refused in one line that says so.

Every projection is kept as `x @ W` ([in, out]), as both layouts store them; only the official span
head (`cls/squad/output_weights`, [2, hidden]) is transposed to the stand-in's [hidden, 2].
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

from mlperf_harness.errors import HarnessError

Float32Array = npt.NDArray[np.float32]
HEAD_SIZE = 64  # BERT's per-head width (tiny 128/2, mini 256/4, large 1024/16)
SHAPE_PROPERTY = "mlperf_harness.bert_shape"  # the stand-in's "LxH, N heads, FFN F" record

_LAYER_WEIGHTS = (
    "attention/query/weight", "attention/query/bias",
    "attention/key/weight", "attention/key/bias",
    "attention/value/weight", "attention/value/bias",
    "attention/output/weight", "attention/output/bias",
    "attention/ln/gamma", "attention/ln/beta",
    "ffn/in/weight", "ffn/in/bias", "ffn/out/weight", "ffn/out/bias",
    "ffn/ln/gamma", "ffn/ln/beta",
)  # fmt: skip
_GLOBAL_WEIGHTS = (
    "embeddings/word", "embeddings/position", "embeddings/token_type",
    "embeddings/ln/gamma", "embeddings/ln/beta", "span/weight", "span/bias",
)  # fmt: skip

# TensorFlow checkpoint name -> our name, per layer and global.
_TF_LAYER = {
    "attention/self/query/kernel": "attention/query/weight",
    "attention/self/query/bias": "attention/query/bias",
    "attention/self/key/kernel": "attention/key/weight",
    "attention/self/key/bias": "attention/key/bias",
    "attention/self/value/kernel": "attention/value/weight",
    "attention/self/value/bias": "attention/value/bias",
    "attention/output/dense/kernel": "attention/output/weight",
    "attention/output/dense/bias": "attention/output/bias",
    "attention/output/LayerNorm/gamma": "attention/ln/gamma",
    "attention/output/LayerNorm/beta": "attention/ln/beta",
    "intermediate/dense/kernel": "ffn/in/weight",
    "intermediate/dense/bias": "ffn/in/bias",
    "output/dense/kernel": "ffn/out/weight",
    "output/dense/bias": "ffn/out/bias",
    "output/LayerNorm/gamma": "ffn/ln/gamma",
    "output/LayerNorm/beta": "ffn/ln/beta",
}
_TF_GLOBAL = {
    "bert/embeddings/word_embeddings": "embeddings/word",
    "bert/embeddings/position_embeddings": "embeddings/position",
    "bert/embeddings/token_type_embeddings": "embeddings/token_type",
    "bert/embeddings/LayerNorm/gamma": "embeddings/ln/gamma",
    "bert/embeddings/LayerNorm/beta": "embeddings/ln/beta",
    "cls/squad/output_weights": "span/weight",
    "cls/squad/output_bias": "span/bias",
}
_TF_LAYER_NAME = re.compile(r"bert/encoder/layer_(\d+)/(.+)")


@dataclass(frozen=True)
class BertWeights:
    """Every weight under our names (`layer{i}/...` per layer), float32, and the head count."""

    arrays: Mapping[str, Float32Array]
    layers: int
    hidden: int
    heads: int
    intermediate: int

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


def _ours(name: str) -> str | None:
    return name if name in _GLOBAL_WEIGHTS or name.startswith("layer") else None


def _tensorflow(name: str) -> str | None:
    name = name.removesuffix(":0")
    if name in _TF_GLOBAL:
        return _TF_GLOBAL[name]
    match = _TF_LAYER_NAME.fullmatch(name)
    if match and match.group(2) in _TF_LAYER:
        return f"layer{match.group(1)}/{_TF_LAYER[match.group(2)]}"
    return None


LAYOUTS: dict[str, Callable[[str], str | None]] = {
    "stand-in": _ours,
    "tensorflow": _tensorflow,
}


def required_names(layers: int) -> list[str]:
    names = list(_GLOBAL_WEIGHTS)
    for layer in range(layers):
        names += [f"layer{layer}/{weight}" for weight in _LAYER_WEIGHTS]
    return names


def _layer_count(names: Mapping[str, object]) -> int:
    layers = {int(m.group(1)) for n in names if (m := re.match(r"layer(\d+)/", n))}
    return max(layers) + 1 if layers else 0


def _heads(model: onnx.ModelProto, hidden: int) -> int:
    """The stand-in records its head count; otherwise BERT's 64-wide heads."""
    for prop in model.metadata_props:
        if prop.key == SHAPE_PROPERTY:
            match = re.search(r"(\d+) heads", prop.value)
            if match:
                return int(match.group(1))
    if hidden % HEAD_SIZE:
        raise HarnessError(
            f"hidden size {hidden} is not a multiple of BERT's head size {HEAD_SIZE}"
        )
    return hidden // HEAD_SIZE


def read_bert_weights(path: Path) -> BertWeights:
    """The weights of the BERT ONNX model at `path`, or one line saying why they cannot be read."""
    try:
        model = onnx.load(str(path))
    except Exception as error:  # DecodeError, OSError, a missing external-data file...
        raise HarnessError(f"{path} is not an ONNX model: {error}") from error
    initializers = {init.name: init for init in model.graph.initializer}
    best: tuple[int, str, dict[str, str]] = (0, "", {})
    for layout, rename in LAYOUTS.items():
        found = {ours: name for name in initializers if (ours := rename(name)) is not None}
        if len(found) > best[0]:
            best = (len(found), layout, found)
    _count, layout, found = best
    layers = _layer_count(found)
    missing = [name for name in required_names(max(layers, 1)) if name not in found]
    if missing:
        known = " or ".join(LAYOUTS)
        raise HarnessError(
            f"{path}: the torch BERT engine finds no weight {missing[0]!r} "
            f"({len(missing)} missing) in either known layout ({known}); its initializers "
            f"start {', '.join(list(initializers)[:3]) or '(none)'}"
        )
    arrays: dict[str, Float32Array] = {}
    for ours, name in found.items():
        if ours in required_names(layers):
            arrays[ours] = np.asarray(numpy_helper.to_array(initializers[name]), dtype=np.float32)
    if layout == "tensorflow":
        arrays["span/weight"] = np.ascontiguousarray(arrays["span/weight"].T)
    hidden = arrays["embeddings/word"].shape[1]
    intermediate = arrays["layer0/ffn/in/weight"].shape[1]
    weights = BertWeights(arrays, layers, hidden, _heads(model, hidden), intermediate)
    check_shapes(weights, path)
    return weights


def expected_shapes(weights: BertWeights) -> dict[str, tuple[int, ...]]:
    h, i = weights.hidden, weights.intermediate
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings/ln/gamma": (h,),
        "embeddings/ln/beta": (h,),
        "span/weight": (h, 2),
        "span/bias": (2,),
    }
    per_layer = {
        "attention/output/weight": (h, h),
        "ffn/in/weight": (h, i),
        "ffn/in/bias": (i,),
        "ffn/out/weight": (i, h),
    }
    for name in ("query", "key", "value"):
        per_layer[f"attention/{name}/weight"] = (h, h)
    for layer in range(weights.layers):
        for weight in _LAYER_WEIGHTS:
            shapes[f"layer{layer}/{weight}"] = per_layer.get(weight, (h,))
    return shapes


def check_shapes(weights: BertWeights, path: Path) -> None:
    arrays = weights.arrays
    for name, shape in expected_shapes(weights).items():
        if arrays[name].shape != shape:
            raise HarnessError(
                f"{path}: BERT weight {name} has shape {arrays[name].shape}, expected {shape}"
            )
    for name in ("embeddings/position", "embeddings/token_type"):
        if arrays[name].ndim != 2 or arrays[name].shape[1] != weights.hidden:
            raise HarnessError(f"{path}: BERT weight {name} has shape {arrays[name].shape}")
    if weights.hidden % weights.heads:
        raise HarnessError(
            f"{path}: hidden {weights.hidden} is not divisible by {weights.heads} heads"
        )
