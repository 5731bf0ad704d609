"""Steps of the text-to-image metrics' networks against NumPy written from their definitions here:
the FID Inception's resize (torch's F.interpolate, bilinear, align_corners False, no antialias) and
the CLIP text tower (pre-LayerNorm layers, causal mask, the feature at the end token, projection),
which SDXL's two text encoders share."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from mlperf_harness.accuracy.t2i_features import INCEPTION_SIZE
from mlperf_harness.benchmarks.sdxl import stand_in_model as parts
from mlperf_harness.onnx_model import make_model

F32 = npt.NDArray[np.float32]


def torch_bilinear(x: F32, size: int) -> F32:
    """F.interpolate(mode="bilinear", align_corners=False) as PyTorch defines it: source
    coordinate (dst + 0.5) * in / out - 0.5, clamped below at 0, linear between neighbours."""
    _, _, h, w = x.shape

    def axis(length: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], F32]:
        src = np.maximum((np.arange(size) + 0.5) * (length / size) - 0.5, 0.0)
        low = np.floor(src).astype(np.int64)
        high = np.minimum(low + 1, length - 1)
        return low, high, (src - low).astype(np.float32)

    y0, y1, fy = axis(h)
    x0, x1, fx = axis(w)
    top = x[:, :, y0][:, :, :, x0] * (1 - fx) + x[:, :, y0][:, :, :, x1] * fx
    bottom = x[:, :, y1][:, :, :, x0] * (1 - fx) + x[:, :, y1][:, :, :, x1] * fx
    out: F32 = (top * (1 - fy)[:, None] + bottom * fy[:, None]).astype(np.float32)
    return out


def test_the_inception_resize_is_torchs_bilinear() -> None:
    sizes = helper.make_tensor(
        "sizes", TensorProto.INT64, [4], [2, 3, INCEPTION_SIZE, INCEPTION_SIZE]
    )
    node = helper.make_node(
        "Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
        coordinate_transformation_mode="pytorch_half_pixel",
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 64, 80])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [sizes],
    )  # fmt: skip
    model: onnx.ModelProto = make_model(graph, 17)
    x = np.random.default_rng(0).random((2, 3, 64, 80), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    assert np.abs(y - torch_bilinear(x, INCEPTION_SIZE)).max() < 1e-5


def _layer_norm(x: F32, weight: F32, bias: F32) -> F32:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: F32 = ((x - mean) / np.sqrt(var + 1e-5) * weight + bias).astype(np.float32)
    return out


def clip_text_numpy(
    w: dict[str, F32], shape: parts.TextShape, ids: npt.NDArray[np.int64], eos: int
) -> tuple[F32, F32]:
    """transformers' CLIPTextModel(WithProjection), written out: hidden_states[-2] and the pooled
    (projected) output at each row's first end token."""
    p = "text_model"
    x = (
        w[f"{p}.embeddings.token_embedding.weight"][ids]
        + w[f"{p}.embeddings.position_embedding.weight"]
    )
    heads, d = shape.heads, shape.width // shape.heads
    mask = np.triu(np.full((77, 77), -np.inf, np.float32), 1)
    hidden = []
    for i in range(shape.layers):
        hidden.append(x)
        lp = f"{p}.encoder.layers.{i}"

        def lin(t: F32, name: str, lp: str = lp) -> F32:
            return t @ w[f"{lp}.{name}.weight"].T + w[f"{lp}.{name}.bias"]

        h = _layer_norm(x, w[f"{lp}.layer_norm1.weight"], w[f"{lp}.layer_norm1.bias"])
        q, k, v = (
            lin(h, f"self_attn.{n}").reshape(len(ids), 77, heads, d).transpose(0, 2, 1, 3)
            for n in ("q_proj", "k_proj", "v_proj")
        )
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + mask
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(len(ids), 77, shape.width)
        x = x + lin(ctx, "self_attn.out_proj")
        h = lin(
            _layer_norm(x, w[f"{lp}.layer_norm2.weight"], w[f"{lp}.layer_norm2.bias"]), "mlp.fc1"
        )
        if shape.activation == "quick_gelu":
            h = h / (1 + np.exp(-1.702 * h))
        else:
            from scipy.special import erf  # type: ignore[import-untyped]  # no stubs published

            h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
        x = x + lin(h, "mlp.fc2")
    hidden.append(x)
    final = _layer_norm(x, w[f"{p}.final_layer_norm.weight"], w[f"{p}.final_layer_norm.bias"])
    pooled = final[np.arange(len(ids)), (ids == eos).argmax(-1)]
    if shape.projection is not None:
        pooled = pooled @ w["text_projection.weight"].T
    return hidden[-2].astype(np.float32), pooled.astype(np.float32)


def test_the_text_encoder_graph_is_clips_text_model() -> None:
    for shape, part in (
        (parts.TextShape(300, 32, 3, 2, 77, "quick_gelu", None), 1),
        (parts.TextShape(300, 48, 2, 4, 77, "gelu", 24), 2),
    ):
        weights = parts.text_weights(shape, 0, part)
        rng = np.random.default_rng(part)
        for name, value in weights.items():  # non-trivial norms and biases, so that each one counts
            if name.endswith(".bias") or "norm" in name:
                weights[name] = (value + rng.normal(0, 0.1, value.shape)).astype(np.float32)
        ids = rng.integers(0, 298, (3, 77)).astype(np.int64)
        ids[:, 0] = 298
        ids[0, 9:], ids[1, 30:], ids[2, 76] = (
            299,
            0,
            299,
        )  # padded with the end token, with 0, or full
        ids[1, 29] = 299
        model = parts.text_encoder_model(weights, shape, eos_token=299)
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        hidden, pooled = session.run(None, {parts.INPUT_IDS: ids})
        want_hidden, want_pooled = clip_text_numpy(weights, shape, ids, 299)
        assert np.abs(hidden - want_hidden).max() < 1e-4
        assert np.abs(pooled - want_pooled).max() < 1e-4
