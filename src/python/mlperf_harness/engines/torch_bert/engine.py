"""BERT's torch engine on disk: the encoder's weights in the engine's precision, one `.npz` with a
header, built once per (model bytes, precision, builder code) into the engine cache.

Unlike ResNet-50's AOTInductor packages, nothing here is compiled ahead of time: the runner builds
the fp16 encoder from these weights (`module.py`) and captures one CUDA graph per sequence-length
bucket and batch size when it starts, which takes seconds and depends on nothing but the weights.
So the engine serves every batch size and GPU (its spec's batch size is 0, its device `cuda`), and
reading the 1.3 GB ONNX model happens once, at build.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.spec import EngineSpec, source_sha256
from mlperf_harness.engines.torch_bert import weights as bert_weights
from mlperf_harness.errors import HarnessError

BACKEND = "torch"
ENGINE_FILE = "bert_weights.npz"
HEADER_KEY = "__header__"  # the npz member holding the JSON header
PRECISIONS = {"fp16": np.float16, "fp32": np.float32}  # numpy has no bf16
ANY_CUDA_GPU = "cuda"


@dataclass(frozen=True)
class EngineHeader:
    layers: int
    hidden: int
    heads: int
    intermediate: int
    precision: str


def bert_engine_spec(benchmark: str, model_sha256: str, precision: str) -> EngineSpec:
    if precision not in PRECISIONS:
        raise HarnessError(
            f"the torch BERT engine is {' or '.join(PRECISIONS)}, not {precision!r}"
            + (" (int8 is the onnxruntime and tensorrt backends')" if precision == "int8" else "")
        )
    return EngineSpec(
        benchmark=benchmark,
        backend=BACKEND,
        precision=precision,
        batch_size=0,  # every batch size: graphs are captured when the runner starts
        model_sha256=model_sha256,
        device=ANY_CUDA_GPU,
        builder_sha256=source_sha256(bert_weights, sys.modules[__name__]),
        options=(("engine", "bert_encoder"),),
    )


def write_engine(model_path: Path, out_dir: Path, precision: str) -> str:
    """Read `model_path`'s weights and write them as the engine file in `out_dir`; return its name."""
    weights = bert_weights.read_bert_weights(model_path)
    dtype = PRECISIONS[precision]
    header = EngineHeader(
        weights.layers, weights.hidden, weights.heads, weights.intermediate, precision
    )
    members: dict[str, Any] = {name: array.astype(dtype) for name, array in weights.arrays.items()}
    # Every weight in the engine's precision, LayerNorm's included: the encoder computes in it
    # throughout (LayerNorm and softmax accumulate in fp32 inside torch's kernels).
    members[HEADER_KEY] = np.frombuffer(json.dumps(header.__dict__).encode(), dtype=np.uint8)
    with (out_dir / ENGINE_FILE).open("wb") as stream:
        np.savez(stream, **members)
    return ENGINE_FILE


def read_engine(path: Path) -> tuple[EngineHeader, dict[str, npt.NDArray[Any]]]:
    try:
        with np.load(path) as archive:
            header = EngineHeader(**json.loads(bytes(archive[HEADER_KEY]).decode()))
            arrays = {name: archive[name] for name in archive.files if name != HEADER_KEY}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{path} is not a torch BERT engine: {error}") from error
    missing = [n for n in bert_weights.required_names(header.layers) if n not in arrays]
    if missing:
        raise HarnessError(f"{path} is not a complete torch BERT engine: no {missing[0]}")
    return header, arrays


def bert_engine(cache: EngineCache, spec: EngineSpec, model_path: Path) -> tuple[Path, bool]:
    """(engine file, whether it was built now)."""
    return cache.get_or_build(
        spec, lambda out_dir: write_engine(model_path, out_dir, spec.precision)
    )
