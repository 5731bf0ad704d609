"""The metrics' feature extractors as ONNX graphs: the FID Inception's and CLIP ViT-B/32's
architecture and names, the official layouts loaded and other layouts refused in one line."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest
from one_line_errors import raised_line

from mlperf_harness.accuracy import t2i_features as features
from mlperf_harness.accuracy import t2i_weights
from mlperf_harness.torch_file import load_safetensors


def _session(model: object) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]


def write_safetensors(path: Path, tensors: dict[str, npt.NDArray[np.float32]]) -> Path:
    header: dict[str, object] = {}
    offset, blobs = 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, np.float32).tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))
    return path


def test_the_full_inception_has_pytorch_fids_names_and_2048_features() -> None:
    shapes = features.inception_weight_shapes(1)
    assert shapes["Conv2d_1a_3x3.conv.weight"] == (32, 3, 3, 3)
    assert shapes["Mixed_6b.branch7x7_2.conv.weight"] == (128, 128, 1, 7)
    assert shapes["Mixed_7c.branch_pool.conv.weight"] == (192, 2048, 1, 1)
    assert features.inception_feature_count(1) == 2048
    # 94 BasicConv2d layers, each a convolution and four BatchNorm tensors.
    assert len(shapes) == 94 * 5


def test_a_narrowed_inception_runs_on_any_image_size() -> None:
    model = features.inception_model(features.seeded_inception_weights(8, 0), 8)
    out = _session(model).run(
        None, {features.PIXELS: np.random.default_rng(0).random((2, 3, 64, 64), np.float32)}
    )[0]
    assert out.shape == (2, 256) and np.isfinite(out).all() and out.min() >= 0  # after ReLU, pooled


def test_a_narrowed_clip_image_tower_gives_embeddings() -> None:
    shape = features.narrowed_clip(600, 8)
    model = features.clip_image_model(features.seeded_clip_image_weights(shape, 0), shape)
    pixels = np.random.default_rng(0).random((2, 3, 224, 224), np.float32)
    out = _session(model).run(None, {features.PIXELS: pixels})[0]
    assert out.shape == (2, shape.embed) and np.isfinite(out).all()


def test_open_clip_state_dict_is_mapped_and_its_qkv_split(tmp_path: Path) -> None:
    shape = features.narrowed_clip(600, 8)
    image = features.seeded_clip_image_weights(shape, 0)
    state: dict[str, npt.NDArray[np.float32]] = {}
    for name, value in image.items():
        if ".attn.q." in name or ".attn.k." in name or ".attn.v." in name:
            continue
        state[name] = value
    for i in range(shape.image_layers):
        p = f"visual.transformer.resblocks.{i}.attn"
        state[f"{p}.in_proj_weight"] = np.concatenate([image[f"{p}.{x}.weight"] for x in "qkv"])
        state[f"{p}.in_proj_bias"] = np.concatenate([image[f"{p}.{x}.bias"] for x in "qkv"])
    t = shape.text
    rng = np.random.default_rng(1)
    state["token_embedding.weight"] = rng.standard_normal((t.vocab, t.width), dtype=np.float32)
    state["positional_embedding"] = rng.standard_normal((77, t.width), dtype=np.float32)
    state["ln_final.weight"], state["ln_final.bias"] = (
        np.ones(t.width, np.float32),
        np.zeros(t.width, np.float32),
    )
    state["text_projection"] = rng.standard_normal((t.width, t.width), dtype=np.float32)
    w = t.width
    for i in range(t.layers):
        p = f"transformer.resblocks.{i}"
        for name, shp in (
            ("attn.in_proj_weight", (3 * w, w)), ("attn.in_proj_bias", (3 * w,)),
            ("attn.out_proj.weight", (w, w)), ("attn.out_proj.bias", (w,)),
            ("ln_1.weight", (w,)), ("ln_1.bias", (w,)), ("ln_2.weight", (w,)), ("ln_2.bias", (w,)),
            ("mlp.c_fc.weight", (4 * w, w)), ("mlp.c_fc.bias", (4 * w,)),
            ("mlp.c_proj.weight", (w, 4 * w)), ("mlp.c_proj.bias", (w,)),
        ):  # fmt: skip
            state[f"{p}.{name}"] = rng.standard_normal(shp, dtype=np.float32)
    path = write_safetensors(tmp_path / "open_clip_model.safetensors", state)
    loaded_image, loaded_text = t2i_weights.load_clip_weights(path, shape)
    for name, value in image.items():
        assert np.array_equal(loaded_image[name], value), name
    assert np.array_equal(loaded_text["text_projection.weight"], state["text_projection"].T)
    q = loaded_text["text_model.encoder.layers.1.self_attn.k_proj.weight"]
    assert np.array_equal(q, state["transformer.resblocks.1.attn.in_proj_weight"][w : 2 * w])
    out = _session(features.clip_text_model(loaded_text, shape, 599)).run(
        None, {"input_ids": np.array([[598] + [1] * 5 + [599] + [0] * 70], np.int64)}
    )[1]
    assert out.shape == (1, w)
    # Another layout: one line naming what differs.
    del state["ln_final.bias"]
    line = raised_line(
        t2i_weights.load_clip_weights, write_safetensors(tmp_path / "x.safetensors", state), shape
    )
    assert "has no ln_final.bias" in line


def test_inception_weights_of_another_shape_are_one_line(tmp_path: Path) -> None:
    weights = features.seeded_inception_weights(1, 0)
    assert load_safetensors(
        write_safetensors(tmp_path / "ok.safetensors", {"a": np.ones(2, np.float32)})
    )["a"].tolist() == [1, 1]
    weights["Mixed_5b.branch1x1.conv.weight"] = np.zeros((64, 192, 3, 3), np.float32)
    path = write_safetensors(tmp_path / "inception.safetensors", weights)
    line = raised_line(t2i_weights.load_inception_weights, path)
    assert "Mixed_5b.branch1x1.conv.weight is [64, 192, 3, 3], expected [64, 192, 1, 1]" in line


def test_missing_metric_weights_are_named_in_one_line(tmp_path: Path) -> None:
    line = raised_line(t2i_weights.metric_weight_files, tmp_path)
    assert "the user's to supply" in line
    assert t2i_weights.INCEPTION_FILE in line and "open_clip_model.safetensors" in line
    (tmp_path / t2i_weights.INCEPTION_FILE).write_bytes(b"x")
    line = raised_line(t2i_weights.metric_weight_files, tmp_path)
    assert t2i_weights.INCEPTION_FILE not in line


@pytest.mark.parametrize("divisor", [4])
def test_narrowed_feature_counts(divisor: int) -> None:
    assert features.inception_feature_count(divisor) == 2048 // divisor
