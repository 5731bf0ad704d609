"""The official weights of the text-to-image metrics' feature extractors, mapped onto the graphs of
t2i_features.py, or one line saying why not.

- FID: pytorch-fid's `pt_inception-2015-12-05-6726825d.pth` (the weights `tools/fid/inception.py`
  downloads: TensorFlow's 2015 Inception ported), a torch state dict under torchvision's
  Inception3 names; its classifier (`fc.*`) is not used.
- CLIP: open_clip's ViT-B-32 with OpenAI's weights (`open_clip.create_model_and_transforms(
  "ViT-B/32", pretrained="openai")`, which `tools/clip/clip_encoder.py` calls), as open_clip's
  state dict: `open_clip_pytorch_model.bin` (torch) or `open_clip_model.safetensors`.
  OpenAI's own TorchScript `ViT-B-32.pt` is not read here.

A file of another layout (a missing name, another shape) is refused in one line; a missing file
gets one line naming it and where it is published.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.t2i_features import (
    VIT_B_32,
    ClipShape,
    clip_image_weight_shapes,
    inception_weight_shapes,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.torch_file import load_safetensors, load_state_dict

Float32Array = npt.NDArray[np.float32]
INCEPTION_FILE = "pt_inception-2015-12-05-6726825d.pth"
CLIP_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
INCEPTION_SOURCE = (
    "pytorch-fid's release fid_weights (the FID_WEIGHTS_URL of MLCommons' tools/fid/inception.py)"
)
CLIP_SOURCE = (
    "open_clip's ViT-B-32 'openai' weights (the Hugging Face repository "
    "timm/vit_base_patch32_clip_224.openai)"
)


@dataclass(frozen=True)
class MetricWeightFiles:
    inception: Path
    clip: Path


def metric_weight_files(directory: Path) -> MetricWeightFiles:
    """The two files in `directory`, or one line naming what is missing and where it is from."""
    inception = directory / INCEPTION_FILE
    clip = next((directory / n for n in CLIP_FILES if (directory / n).is_file()), None)
    missing = []
    if not inception.is_file():
        missing.append(f"{inception} ({INCEPTION_SOURCE})")
    if clip is None:
        missing.append(f"{directory / CLIP_FILES[0]} or {CLIP_FILES[1]} ({CLIP_SOURCE})")
    if missing:
        raise HarnessError(
            "the accuracy metrics' weights are the user's to supply; missing: " + "; ".join(missing)
        )
    assert clip is not None
    return MetricWeightFiles(inception, clip)


def _check(
    path: Path, what: str, found: dict[str, Any], expected: dict[str, tuple[int, ...]]
) -> None:
    for name, shape in expected.items():
        if name not in found:
            raise HarnessError(f"{path} is not {what}: it has no {name}")
        if tuple(found[name].shape) != shape:
            raise HarnessError(
                f"{path} is not {what}: {name} is {list(found[name].shape)}, expected {list(shape)}"
            )


def load_inception_weights(path: Path) -> dict[str, Float32Array]:
    state = _load_any(path)
    expected = inception_weight_shapes(1)
    _check(path, "pytorch-fid's FID Inception weights", state, expected)
    return {name: np.asarray(state[name], np.float32) for name in expected}


def _load_any(path: Path) -> dict[str, npt.NDArray[Any]]:
    return load_safetensors(path) if path.suffix == ".safetensors" else load_state_dict(path)


def load_clip_weights(
    path: Path, shape: ClipShape = VIT_B_32
) -> tuple[dict[str, Float32Array], dict[str, Float32Array]]:
    """open_clip's state dict -> (image tower weights, text tower weights under transformers'
    CLIPTextModelWithProjection names)."""
    state = {k: np.asarray(v, np.float32) for k, v in _load_any(path).items()}
    what = "open_clip's ViT-B-32 state dict"
    c = shape.image_width
    image: dict[str, Float32Array] = {}
    for i in range(shape.image_layers):
        p = f"visual.transformer.resblocks.{i}.attn"
        packed = _get(state, f"{p}.in_proj_weight", (3 * c, c), path, what)
        packed_bias = _get(state, f"{p}.in_proj_bias", (3 * c,), path, what)
        for j, part in enumerate("qkv"):
            image[f"{p}.{part}.weight"] = packed[j * c : (j + 1) * c]
            image[f"{p}.{part}.bias"] = packed_bias[j * c : (j + 1) * c]
    expected = clip_image_weight_shapes(shape)
    for name, want in expected.items():
        if name not in image:
            image[name] = _get(state, name, want, path, what)
    t = shape.text
    text: dict[str, Float32Array] = {
        "text_model.embeddings.token_embedding.weight": _get(
            state, "token_embedding.weight", (t.vocab, t.width), path, what
        ),
        "text_model.embeddings.position_embedding.weight": _get(
            state, "positional_embedding", (t.positions, t.width), path, what
        ),
        "text_model.final_layer_norm.weight": _get(
            state, "ln_final.weight", (t.width,), path, what
        ),
        "text_model.final_layer_norm.bias": _get(state, "ln_final.bias", (t.width,), path, what),
        "text_projection.weight": np.ascontiguousarray(
            _get(state, "text_projection", (t.width, t.projection or t.width), path, what).T
        ),
    }
    w = t.width
    for i in range(t.layers):
        src, dst = f"transformer.resblocks.{i}", f"text_model.encoder.layers.{i}"
        packed = _get(state, f"{src}.attn.in_proj_weight", (3 * w, w), path, what)
        packed_bias = _get(state, f"{src}.attn.in_proj_bias", (3 * w,), path, what)
        for j, part in enumerate(("q_proj", "k_proj", "v_proj")):
            text[f"{dst}.self_attn.{part}.weight"] = packed[j * w : (j + 1) * w]
            text[f"{dst}.self_attn.{part}.bias"] = packed_bias[j * w : (j + 1) * w]
        for a, b, shp in (
            ("attn.out_proj.weight", "self_attn.out_proj.weight", (w, w)),
            ("attn.out_proj.bias", "self_attn.out_proj.bias", (w,)),
            ("ln_1.weight", "layer_norm1.weight", (w,)),
            ("ln_1.bias", "layer_norm1.bias", (w,)),
            ("ln_2.weight", "layer_norm2.weight", (w,)),
            ("ln_2.bias", "layer_norm2.bias", (w,)),
            ("mlp.c_fc.weight", "mlp.fc1.weight", (4 * w, w)),
            ("mlp.c_fc.bias", "mlp.fc1.bias", (4 * w,)),
            ("mlp.c_proj.weight", "mlp.fc2.weight", (w, 4 * w)),
            ("mlp.c_proj.bias", "mlp.fc2.bias", (w,)),
        ):
            text[f"{dst}.{b}"] = _get(state, f"{src}.{a}", shp, path, what)
    return image, text


def _get(
    state: dict[str, Float32Array], name: str, shape: tuple[int, ...], path: Path, what: str
) -> Float32Array:
    if name not in state:
        raise HarnessError(f"{path} is not {what}: it has no {name}")
    if tuple(state[name].shape) != shape:
        raise HarnessError(
            f"{path} is not {what}: {name} is {list(state[name].shape)}, expected {list(shape)}"
        )
    return state[name]


def official_extractors(directory: Path, tokenizer: Any) -> Any:
    """The reference's three networks with the official weights in `directory`, on ONNX Runtime
    (building the graphs takes seconds); one line for a missing or foreign file."""
    from mlperf_harness.accuracy.coco_t2i import Extractors
    from mlperf_harness.accuracy.t2i_features import (
        clip_image_model,
        clip_text_model,
        inception_model,
    )
    from mlperf_harness.backends.onnxruntime.session import cpu_session

    files = metric_weight_files(directory)
    image, text = load_clip_weights(files.clip)

    def session(model: Any) -> Any:
        return cpu_session(model.SerializeToString())

    if tokenizer.vocab_size != VIT_B_32.text.vocab:
        raise HarnessError(
            f"the CLIP score needs CLIP's own BPE vocabulary ({VIT_B_32.text.vocab} ids), not one "
            f"of {tokenizer.vocab_size}"
        )
    return Extractors(
        inception=session(inception_model(load_inception_weights(files.inception))),
        clip_image=session(clip_image_model(image, VIT_B_32)),
        clip_text=session(clip_text_model(text, VIT_B_32, tokenizer.end_id)),
        tokenizer=tokenizer,
    )
