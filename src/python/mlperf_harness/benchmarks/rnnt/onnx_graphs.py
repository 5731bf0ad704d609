"""RNN-T as three ONNX graphs, from weights under the reference's names (topology.py):

- encoder: `features` [T, B, 240] float32 (T even: a batch is padded to it), `lengths` [B] int64
  -> `encoded` [B, T / 2, H]. The pre-stacking LSTM's outputs past each utterance's length are
  zeroed before frames are stacked, so a padded batch stacks exactly what the reference stacks for
  the utterance alone (its odd last frame beside zeros).
- prediction step: `symbol` [B] int64 (SOS, 28, for the start of a sentence: a zero embedding, as
  the reference feeds), `h_in`, `c_in` [2, B, P] -> `g` [B, P], `h_out`, `c_out`.
- joint: `f` [B, H], `g` [B, P] -> `symbol` [B] int64, the arg max of the 29 logits (the first on
  a tie), and `logits` [B, 29].

Opset 17; dynamic batch and time. The greedy decoder (greedy.py) runs the last two once per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.benchmarks.rnnt.topology import RnntSizes
from mlperf_harness.benchmarks.rnnt.weights import Weights

OPSET = 17
ENCODER, PREDICTION, JOINT = "encoder", "prediction", "joint"
# PyTorch's gate blocks (i, f, g, o) in ONNX's order (i, o, f, c).
_ONNX_GATES = (0, 3, 1, 2)


def _gates(array: npt.NDArray[np.float32], hidden: int) -> npt.NDArray[np.float32]:
    blocks = [array[k * hidden : (k + 1) * hidden] for k in _ONNX_GATES]
    return np.ascontiguousarray(np.concatenate(blocks)).astype(np.float32)


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def name(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def const(self, stem: str, value: npt.NDArray[np.generic]) -> str:
        name = self.name(stem)
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> list[str]:
        names = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, **attrs))
        return names

    def lstm_layer(
        self,
        weights: Mapping[str, npt.NDArray[np.float32]],
        prefix: str,
        layer: int,
        x: str,
        initial: tuple[str, str] | None = None,
    ) -> tuple[str, str, str]:
        """One PyTorch LSTM layer as ONNX's LSTM: (Y [T, B, H], Y_h [1, B, H], Y_c [1, B, H])."""
        w_ih = weights[f"{prefix}.weight_ih_l{layer}"]
        hidden = w_ih.shape[0] // 4
        w = self.const("W", _gates(w_ih, hidden)[None])
        r = self.const("R", _gates(weights[f"{prefix}.weight_hh_l{layer}"], hidden)[None])
        bias = np.concatenate(
            [
                _gates(weights[f"{prefix}.bias_ih_l{layer}"], hidden),
                _gates(weights[f"{prefix}.bias_hh_l{layer}"], hidden),
            ]
        )[None]
        b = self.const("B", bias)
        inputs = [x, w, r, b] + (["", initial[0], initial[1]] if initial else [])
        y, y_h, y_c = self.op("LSTM", inputs, 3, hidden_size=hidden)
        (squeezed,) = self.op("Squeeze", [y, self.const("axis", np.array([1], np.int64))])
        return squeezed, y_h, y_c

    def model(
        self,
        inputs: list[onnx.ValueInfoProto],
        outputs: list[onnx.ValueInfoProto],
        name: str,
        doc: str,
        metadata: Mapping[str, str],
    ) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        model.doc_string = doc
        for key, value in metadata.items():
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
        onnx.checker.check_model(model)
        return model


def _rename(graph: _Graph, source: str, name: str) -> None:
    graph.nodes.append(helper.make_node("Identity", [source], [name]))


def encoder_model(
    weights: Weights, sizes: RnntSizes, doc: str, metadata: Mapping[str, str]
) -> onnx.ModelProto:
    g = _Graph()
    x = "features"
    for layer in range(sizes.pre_layers):
        x, _, _ = g.lstm_layer(weights, "encoder.pre_rnn.lstm", layer, x)
    # Zero the frames past each utterance's length: [T, B] mask from Range(T) < lengths.
    (shape,) = g.op("Shape", [x])
    (steps,) = g.op("Gather", [shape, g.const("zero", np.array(0, np.int64))], axis=0)
    (times,) = g.op(
        "Range",
        [g.const("zero", np.array(0, np.int64)), steps, g.const("one", np.array(1, np.int64))],
    )
    (column,) = g.op("Unsqueeze", [times, g.const("axis", np.array([1], np.int64))])
    (inside,) = g.op("Less", [column, "lengths"])
    (mask,) = g.op("Cast", [inside], to=TensorProto.FLOAT)
    (mask3,) = g.op("Unsqueeze", [mask, g.const("axis", np.array([2], np.int64))])
    (x,) = g.op("Mul", [x, mask3])
    # Stack time: [T, B, H] -> [B, T, H] -> [B, T / k, k H] -> [T / k, B, k H].
    (batch_first,) = g.op("Transpose", [x], perm=[1, 0, 2])
    stacked_shape = np.array([0, -1, sizes.stack_time * sizes.encoder_hidden], np.int64)
    (stacked,) = g.op("Reshape", [batch_first, g.const("shape", stacked_shape)])
    (x,) = g.op("Transpose", [stacked], perm=[1, 0, 2])
    for layer in range(sizes.post_layers):
        x, _, _ = g.lstm_layer(weights, "encoder.post_rnn.lstm", layer, x)
    (encoded,) = g.op("Transpose", [x], perm=[1, 0, 2])
    _rename(g, encoded, "encoded")
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    return g.model(
        [
            helper.make_tensor_value_info("features", f32, ["T", "B", sizes.features]),
            helper.make_tensor_value_info("lengths", i64, ["B"]),
        ],
        [helper.make_tensor_value_info("encoded", f32, ["B", "T2", sizes.encoder_hidden])],
        "rnnt_encoder",
        doc,
        metadata,
    )


def prediction_model(
    weights: Weights, sizes: RnntSizes, doc: str, metadata: Mapping[str, str]
) -> onnx.ModelProto:
    g = _Graph()
    pred = sizes.prediction_hidden
    table = np.concatenate(
        [weights["prediction.embed.weight"], np.zeros((1, pred), np.float32)]
    )  # row SOS: the reference's zero input for the start of a sentence
    (embedded,) = g.op("Gather", [g.const("embed", table), "symbol"], axis=0)
    (x,) = g.op("Unsqueeze", [embedded, g.const("axis", np.array([0], np.int64))])
    hs, cs = [], []
    for layer in range(sizes.prediction_layers):
        index = np.array([layer], np.int64)
        (h0,) = g.op("Gather", ["h_in", g.const("layer", index)], axis=0)
        (c0,) = g.op("Gather", ["c_in", g.const("layer", index)], axis=0)
        x, h, c = g.lstm_layer(weights, "prediction.dec_rnn.lstm", layer, x, (h0, c0))
        hs.append(h)
        cs.append(c)
    (out,) = g.op("Squeeze", [x, g.const("axis", np.array([0], np.int64))])
    _rename(g, out, "g")
    (h_out,) = g.op("Concat", hs, axis=0)
    (c_out,) = g.op("Concat", cs, axis=0)
    _rename(g, h_out, "h_out")
    _rename(g, c_out, "c_out")
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    layers = sizes.prediction_layers
    return g.model(
        [
            helper.make_tensor_value_info("symbol", i64, ["B"]),
            helper.make_tensor_value_info("h_in", f32, [layers, "B", pred]),
            helper.make_tensor_value_info("c_in", f32, [layers, "B", pred]),
        ],
        [
            helper.make_tensor_value_info("g", f32, ["B", pred]),
            helper.make_tensor_value_info("h_out", f32, [layers, "B", pred]),
            helper.make_tensor_value_info("c_out", f32, [layers, "B", pred]),
        ],
        "rnnt_prediction_step",
        doc,
        metadata,
    )


def joint_model(
    weights: Weights, sizes: RnntSizes, doc: str, metadata: Mapping[str, str]
) -> onnx.ModelProto:
    g = _Graph()
    (both,) = g.op("Concat", ["f", "g"], axis=1)  # encoder first, as the reference concatenates
    w0 = g.const("W0", np.ascontiguousarray(weights["joint.net.0.weight"].T))
    (hidden,) = g.op("Gemm", [both, w0, g.const("b0", weights["joint.net.0.bias"])])
    (relu,) = g.op("Relu", [hidden])
    w3 = g.const("W3", np.ascontiguousarray(weights["joint.net.3.weight"].T))
    (logits,) = g.op("Gemm", [relu, w3, g.const("b3", weights["joint.net.3.bias"])])
    _rename(g, logits, "logits")
    (best,) = g.op("ArgMax", [logits], axis=1, keepdims=0)
    _rename(g, best, "symbol")
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    return g.model(
        [
            helper.make_tensor_value_info("f", f32, ["B", sizes.encoder_hidden]),
            helper.make_tensor_value_info("g", f32, ["B", sizes.prediction_hidden]),
        ],
        [
            helper.make_tensor_value_info("symbol", i64, ["B"]),
            helper.make_tensor_value_info("logits", f32, ["B", sizes.symbols]),
        ],
        "rnnt_joint",
        doc,
        metadata,
    )


def rnnt_models(
    weights: Weights, sizes: RnntSizes, doc: str, metadata: Mapping[str, str]
) -> dict[str, onnx.ModelProto]:
    return {
        ENCODER: encoder_model(weights, sizes, doc, metadata),
        PREDICTION: prediction_model(weights, sizes, doc, metadata),
        JOINT: joint_model(weights, sizes, doc, metadata),
    }
