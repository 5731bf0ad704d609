"""Small GPT-J checkpoints in Hugging Face's layouts, written here without torch: config.json, and
the weights in safetensors shards (an 8-byte little-endian header length, the JSON header, the raw
bytes: written by hand with numpy) with their index, or pytorch_model-*.bin names in an index.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, random_weights

SMALL = GptjShape(layers=2, hidden=16, heads=2, rotary_dim=4, vocab_size=40, inner=24)


def config_json(shape: GptjShape, model_type: str = "gptj") -> dict[str, Any]:
    """GPTJConfig's fields for `shape` (n_inner None: 4 x n_embd, as GPT-J 6B's config has it)."""
    return {
        "model_type": model_type,
        "architectures": ["GPTJForCausalLM"],
        "n_layer": shape.layers,
        "n_embd": shape.hidden,
        "n_head": shape.heads,
        "rotary_dim": shape.rotary_dim,
        "vocab_size": shape.vocab_size,
        "n_inner": None if shape.inner == 4 * shape.hidden else shape.inner,
        "n_positions": shape.max_positions,
    }


def safetensors_bytes(tensors: Mapping[str, npt.NDArray[Any]]) -> bytes:
    """A safetensors file of float32 tensors, in the format's own layout."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    data = bytearray()
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)  # the format pads the header to 8 bytes
    return struct.pack("<Q", len(encoded)) + encoded + bytes(data)


def write_safetensors_checkpoint(
    directory: Path,
    tensors: Mapping[str, npt.NDArray[Any]],
    shape: GptjShape = SMALL,
    shards: int = 2,
    config: Mapping[str, Any] | None = None,
) -> Path:
    """config.json, `shards` model-0000N-of-0000M.safetensors files and their index."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config or config_json(shape)))
    names = list(tensors)
    weight_map: dict[str, str] = {}
    for number, part in enumerate(_split(names, shards), start=1):
        file_name = f"model-{number:05d}-of-{shards:05d}.safetensors"
        (directory / file_name).write_bytes(safetensors_bytes({n: tensors[n] for n in part}))
        weight_map.update(dict.fromkeys(part, file_name))
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    return directory


def write_pytorch_index(directory: Path, names: Sequence[str], shape: GptjShape = SMALL) -> Path:
    """config.json and a pytorch_model.bin.index.json placing `names` in three shard files (empty
    here: their tensors are read by torch alone)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config_json(shape)))
    weight_map: dict[str, str] = {}
    for number, part in enumerate(_split(list(names), 3), start=1):
        file_name = f"pytorch_model-{number:05d}-of-00003.bin"
        (directory / file_name).write_bytes(b"")
        weight_map.update(dict.fromkeys(part, file_name))
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (directory / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    return directory


def small_weights(seed: int = 0) -> dict[str, npt.NDArray[np.float32]]:
    return dict(random_weights(SMALL, seed))


def _split(names: list[str], parts: int) -> list[list[str]]:
    size = -(-len(names) // parts)
    return [names[i : i + size] for i in range(0, len(names), size)]
