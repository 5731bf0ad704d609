"""The layers SDXL's parts are made of, written as ONNX nodes from weights named as in `diffusers`
and `transformers` state dicts (PyTorch layouts: Linear [out, in], Conv2d [out, in, kh, kw]).

Shared by the stand-in SDXL's text encoders, UNet and VAE decoder (benchmarks/sdxl) and by the
text-to-image metrics' feature extractors (accuracy/t2i_features): one way to write a linear layer,
a convolution, a group norm and multi-head attention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.onnx_model import GraphWriter

Float32Array = npt.NDArray[np.float32]
OPSET = 17  # LayerNormalization


@dataclass(frozen=True)
class PreNormNames:
    """The weights of one pre-LayerNorm transformer layer (CLIP's text and image towers)."""

    ln1: str
    q: str
    k: str
    v: str
    out: str
    ln2: str
    fc1: str
    fc2: str


class LayerWriter(GraphWriter):
    def __init__(self, weights: Mapping[str, Float32Array]) -> None:
        super().__init__(weights)
        self._constants: dict[str, str] = {}

    def scalar(self, value: float) -> str:
        """A float32 scalar, written once per value."""
        key = f"scalar/{value!r}"
        if key not in self._constants:
            self._constants[key] = self.constant(key, np.array(value, np.float32))
        return self._constants[key]

    def ints(self, *values: int) -> str:
        key = "ints/" + ",".join(str(v) for v in values)
        if key not in self._constants:
            self._constants[key] = self.constant(key, np.array(values, np.int64))
        return self._constants[key]

    def weight(self, name: str) -> str:
        return self.constant(name, np.asarray(self.weights[name], np.float32))

    def linear(self, x: str, name: str, bias: bool = True) -> str:
        """x @ W.T (+ b) on the last axis."""
        w = self.constant(
            f"{name}.weight_t", np.ascontiguousarray(self.weights[f"{name}.weight"].T)
        )
        y = self.node("MatMul", [x, w], f"{name}/matmul")
        if bias:
            y = self.node("Add", [y, self.weight(f"{name}.bias")], f"{name}/add")
        return y

    def conv(
        self,
        x: str,
        name: str,
        stride: int = 1,
        bias: bool = True,
        padding: tuple[int, int] | None = None,
    ) -> str:
        """torch.nn.Conv2d; padding (rows, columns), by default half the kernel ("same")."""
        w = self.weights[f"{name}.weight"]
        kh, kw = int(w.shape[2]), int(w.shape[3])
        ph, pw = padding if padding is not None else (kh // 2, kw // 2)
        inputs = [x, self.weight(f"{name}.weight")]
        if bias:
            inputs.append(self.weight(f"{name}.bias"))
        return self.node(
            "Conv",
            inputs,
            f"{name}/conv",
            kernel_shape=[kh, kw],
            strides=[stride, stride],
            pads=[ph, pw, ph, pw],
        )

    def layer_norm(self, x: str, name: str, epsilon: float = 1e-5) -> str:
        return self.node(
            "LayerNormalization",
            [x, self.weight(f"{name}.weight"), self.weight(f"{name}.bias")],
            f"{name}/ln",
            axis=-1,
            epsilon=epsilon,
        )

    def group_norm(self, x: str, name: str, groups: int, epsilon: float) -> str:
        """torch.nn.GroupNorm on [N, C, H, W]: InstanceNormalization over [N, groups, rest]."""
        channels = int(self.weights[f"{name}.weight"].shape[0])
        grouped = self.node("Reshape", [x, self.ints(0, groups, -1)], f"{name}/grouped")
        ones = self.constant(f"{name}/ones", np.ones(groups, np.float32))
        zeros = self.constant(f"{name}/zeros", np.zeros(groups, np.float32))
        normed = self.node(
            "InstanceNormalization", [grouped, ones, zeros], f"{name}/in", epsilon=epsilon
        )
        shape = self.node("Shape", [x], f"{name}/shape")
        y = self.node("Reshape", [normed, shape], f"{name}/ungrouped")
        gamma = self.constant(
            f"{name}.weight_c", self.weights[f"{name}.weight"].reshape(channels, 1, 1)
        )
        beta = self.constant(f"{name}.bias_c", self.weights[f"{name}.bias"].reshape(channels, 1, 1))
        return self.node(
            "Add", [self.node("Mul", [y, gamma], f"{name}/scale"), beta], f"{name}/out"
        )

    def silu(self, x: str, name: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x], f"{name}/sigmoid")], f"{name}/silu")

    def gelu(self, x: str, name: str) -> str:
        """Exact (erf) GELU, torch's default."""
        inner = self.node(
            "Erf",
            [self.node("Mul", [x, self.scalar(1 / np.sqrt(2.0))], f"{name}/s")],
            f"{name}/erf",
        )
        one_plus = self.node("Add", [inner, self.scalar(1.0)], f"{name}/1p")
        return self.node(
            "Mul",
            [self.node("Mul", [x, one_plus], f"{name}/x1p"), self.scalar(0.5)],
            f"{name}/gelu",
        )

    def quick_gelu(self, x: str, name: str) -> str:
        """x * sigmoid(1.702 x): OpenAI CLIP's activation."""
        gate = self.node(
            "Sigmoid", [self.node("Mul", [x, self.scalar(1.702)], f"{name}/s")], f"{name}/sig"
        )
        return self.node("Mul", [x, gate], f"{name}/qgelu")

    def attention(
        self,
        query: str,
        context: str,
        heads: int,
        head_dim: int,
        q: str,
        k: str,
        v: str,
        out: str,
        bias: bool,
        mask: str | None = None,
    ) -> str:
        """Multi-head attention on [N, L, C] (query) and [N, S, D] (keys and values): q, k, v, out
        name Linear layers (out always with a bias, as diffusers' to_out.0 and CLIP's out_proj)."""
        split = self.ints(0, 0, heads, head_dim)

        def heads_of(x: str, name: str, perm: list[int]) -> str:
            y = self.node("Reshape", [self.linear(x, name, bias), split], f"{name}/heads")
            return self.node("Transpose", [y], f"{name}/t", perm=perm)

        qh = heads_of(query, q, [0, 2, 1, 3])  # [N, h, L, d]
        kh = heads_of(context, k, [0, 2, 3, 1])  # [N, h, d, S]
        vh = heads_of(context, v, [0, 2, 1, 3])  # [N, h, S, d]
        scores = self.node("MatMul", [qh, kh], f"{out}/qk")
        scores = self.node("Mul", [scores, self.scalar(1.0 / np.sqrt(head_dim))], f"{out}/scaled")
        if mask is not None:
            scores = self.node("Add", [scores, mask], f"{out}/masked")
        probs = self.node("Softmax", [scores], f"{out}/probs", axis=-1)
        ctx = self.node("MatMul", [probs, vh], f"{out}/ctx")
        ctx = self.node("Transpose", [ctx], f"{out}/ctx_t", perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.ints(0, 0, heads * head_dim)], f"{out}/merged")
        return self.linear(ctx, out, True)

    def pre_norm_layer(
        self, x: str, n: PreNormNames, heads: int, activation: str, mask: str | None = None
    ) -> str:
        """x + attn(ln1(x)), then + fc2(act(fc1(ln2(x)))); activation "quick_gelu" or "gelu"."""
        width = int(self.weights[f"{n.q}.weight"].shape[0])
        normed = self.layer_norm(x, n.ln1)
        a = self.attention(
            normed, normed, heads, width // heads, n.q, n.k, n.v, n.out, bias=True, mask=mask
        )
        x = self.node("Add", [x, a], f"{n.out}/res")
        h = self.linear(self.layer_norm(x, n.ln2), n.fc1)
        h = (
            self.quick_gelu(h, f"{n.fc1}/act")
            if activation == "quick_gelu"
            else self.gelu(h, f"{n.fc1}/act")
        )
        return self.node("Add", [x, self.linear(h, n.fc2)], f"{n.fc2}/res")
