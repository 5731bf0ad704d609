"""The shared ONNX layers against NumPy written from torch's definitions: GroupNorm (SDXL's UNet and
VAE) and the GEGLU-free parts a UNet step relies on (linear on the last axis, 'same' convolution)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnx import TensorProto, helper

from mlperf_harness.onnx_layers import OPSET, LayerWriter
from mlperf_harness.onnx_model import make_model

F32 = npt.NDArray[np.float32]


def _run(writer: LayerWriter, out: str, x: F32) -> F32:
    writer.node("Identity", [out], "y")
    graph = helper.make_graph(
        writer.nodes, "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], writer.initializers,
    )  # fmt: skip
    session = ort.InferenceSession(
        make_model(graph, OPSET).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    result: F32 = session.run(None, {"x": x})[0]
    return result


def test_group_norm_is_torchs() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 5, 6), dtype=np.float32) * 3 + 1
    weights = {
        "gn.weight": rng.standard_normal(8, dtype=np.float32),
        "gn.bias": rng.standard_normal(8, dtype=np.float32),
    }
    writer = LayerWriter(weights)
    y = _run(writer, writer.group_norm("x", "gn", groups=4, epsilon=1e-5), x)
    grouped = x.reshape(2, 4, -1)
    normed = (grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(
        grouped.var(-1, keepdims=True) + 1e-5
    )
    want = (
        normed.reshape(x.shape) * weights["gn.weight"][:, None, None]
        + weights["gn.bias"][:, None, None]
    )
    assert np.abs(y - want).max() < 1e-4


def test_a_same_convolution_keeps_the_size_and_a_strided_one_halves_it() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 8, 8), dtype=np.float32)
    weights = {
        "c.weight": rng.standard_normal((4, 3, 3, 3), dtype=np.float32),
        "c.bias": np.zeros(4, np.float32),
    }
    writer = LayerWriter(weights)
    assert _run(writer, writer.conv("x", "c"), x).shape == (1, 4, 8, 8)
    writer = LayerWriter(weights)
    y = _run(writer, writer.conv("x", "c", stride=2), x)
    # torch: out[0, o, 0, 0] = sum over the 3x3 window at (-1, -1) of the zero-padded input.
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.einsum("cij,ocij->o", padded[0, :, 0:3, 0:3], weights["c.weight"])
    assert y.shape == (1, 4, 4, 4) and np.abs(y[0, :, 0, 0] - want).max() < 1e-4
