"""The embedded default model for BERT: an ONNX BERT with the official interface that answers the
generated SQuAD questions (`stand_in_data`).

Interface of MLPerf's fp32 BERT-large ONNX model: inputs `input_ids`, `input_mask`, `segment_ids`,
int64 [N, 384]; outputs `output_start_logits`, `output_end_logits`, float32 [N, 384]; the batch
dimension is dynamic. The graph is the post-LayerNorm BERT encoder in standard ops that ONNX
Runtime's CPU provider runs (and fuses) well: word, position and token-type embeddings gathered and
summed, LayerNormalization (opset 17), per layer multi-head self-attention with the additive mask
(1 - input_mask) * -10000, Softmax, GELU written with Erf, residual connections; then the span head,
a [hidden, 2] matrix and bias. Sizes are parameters: the default is BERT-tiny's (2 layers, hidden
128, 2 heads, FFN 512); BERT-mini's 4 x 256 and the real BERT-large's 24 x 1024 are there too.

The recipe, each step for a reason:

1. Seeded random weights. The embedding rows of each group of tokens the builder names (the
   generated names' first, middle and last wordpieces) share one random direction on top of their
   own: what training gives tokens of one kind, and what lets a small hidden size tell ~240 name
   pieces from ~30,000 other tokens linearly (random rows alone overlap too much at hidden 128).
2. Damped residual branches: each attention and feed-forward branch enters its residual sum scaled
   by RESIDUAL_SCALE, so the token's identity survives to the last layer's hidden state while the
   branches still mix in context.
3. The span head fitted on the model's own final hidden states (`span_head.fit_span_head`) and
   written into the graph.

Measured at the default size, seed 0 (head fitted on the 713 windows of 300 generated training
paragraphs, evaluated on the 1,396 windows of 600 held-out ones): the argmax over context tokens
found the answer's start and end in 100% of held-out windows. Without the shared directions: 10%
and 15%. With a weaker direction (0.3), damping the branches to 0.2 gave 84% / 62% where undamped
branches gave 57% / 57%.

The build is deterministic on one machine: weights come from NumPy's seeded generator, hidden
states from ONNX Runtime with deterministic compute, the fit from float64 linear algebra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

from mlperf_harness.errors import HarnessError
from mlperf_harness.onnx_model import GraphWriter, make_model

Float32Array = npt.NDArray[np.float32]
Int64Array = npt.NDArray[np.int64]

# The official model's interface.
INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
INPUT_NAMES = (INPUT_IDS, INPUT_MASK, SEGMENT_IDS)
START_LOGITS = "output_start_logits"
END_LOGITS = "output_end_logits"
OUTPUT_NAMES = (START_LOGITS, END_LOGITS)
SEQ_LENGTH = 384
FINAL_HIDDEN = "final_hidden"  # the body graph's output, [N, 384, hidden] (build step only)

OPSET = 17  # LayerNormalization; QDQ quantization and TensorRT 10 read it
LAYER_NORM_EPSILON = 1e-12  # BERT's
MASK_PENALTY = -10000.0  # BERT's additive attention mask for padding

# Weight scales (step 1 and 2 of the recipe).
POSITION_SCALE = 0.2  # position and token-type rows, against the word rows' standard deviation 1
GROUP_DIRECTION_SCALE = 1.0  # a token group's shared direction, against its rows' own
RESIDUAL_SCALE = 0.2  # each branch's output weights and bias


@dataclass(frozen=True)
class BertShape:
    layers: int = 2
    hidden: int = 128
    heads: int = 2
    intermediate: int = 512
    vocab_size: int = 30_522
    max_positions: int = 512
    token_types: int = 2

    def check(self) -> None:
        if min(self.layers, self.hidden, self.heads, self.intermediate, self.vocab_size) < 1:
            raise HarnessError(f"every BERT size must be at least 1, got {self}")
        if self.hidden % self.heads:
            raise HarnessError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.max_positions < SEQ_LENGTH:
            raise HarnessError(f"max_positions {self.max_positions} < sequence {SEQ_LENGTH}")

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


BERT_TINY = BertShape()  # the default stand-in
BERT_MINI = BertShape(layers=4, hidden=256, heads=4, intermediate=1024)
BERT_LARGE = BertShape(layers=24, hidden=1024, heads=16, intermediate=4096)  # the official size
SHAPES = {"tiny": BERT_TINY, "mini": BERT_MINI, "large": BERT_LARGE}


# ---------------------------------------------------------------------------------------------------
# Weights


def weight_shapes(shape: BertShape) -> dict[str, tuple[int, ...]]:
    """Every weight of the encoder and the span head by name, in the order they are drawn."""
    h, i = shape.hidden, shape.intermediate
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings/word": (shape.vocab_size, h),
        "embeddings/position": (shape.max_positions, h),
        "embeddings/token_type": (shape.token_types, h),
        "embeddings/ln/gamma": (h,),
        "embeddings/ln/beta": (h,),
    }
    for layer in range(shape.layers):
        p = f"layer{layer}"
        for name in ("query", "key", "value", "output"):
            shapes[f"{p}/attention/{name}/weight"] = (h, h)
            shapes[f"{p}/attention/{name}/bias"] = (h,)
        shapes[f"{p}/attention/ln/gamma"] = (h,)
        shapes[f"{p}/attention/ln/beta"] = (h,)
        shapes[f"{p}/ffn/in/weight"] = (h, i)
        shapes[f"{p}/ffn/in/bias"] = (i,)
        shapes[f"{p}/ffn/out/weight"] = (i, h)
        shapes[f"{p}/ffn/out/bias"] = (h,)
        shapes[f"{p}/ffn/ln/gamma"] = (h,)
        shapes[f"{p}/ffn/ln/beta"] = (h,)
    shapes["span/weight"] = (h, 2)
    shapes["span/bias"] = (2,)
    return shapes


def parameter_count(shape: BertShape) -> int:
    return sum(int(np.prod(dims)) for dims in weight_shapes(shape).values())


def random_weights(
    shape: BertShape, seed: int, token_groups: Sequence[Int64Array] = ()
) -> dict[str, Float32Array]:
    """Seeded encoder weights (steps 1 and 2 of the recipe); the span head is zero until fitted.

    Each array of `token_groups` names embedding rows that share one random direction.
    """
    shape.check()
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    rng = np.random.default_rng(np.random.SeedSequence([seed]))

    def normal(dims: tuple[int, ...], std: float) -> Float32Array:
        return rng.standard_normal(dims, dtype=np.float32) * np.float32(std)

    weights: dict[str, Float32Array] = {}
    for name, dims in weight_shapes(shape).items():
        kind = name.rsplit("/", 1)[-1]
        if name == "embeddings/word":
            weights[name] = normal(dims, 1.0)
        elif name.startswith("embeddings/") and kind not in ("gamma", "beta"):
            weights[name] = normal(dims, POSITION_SCALE)
        elif kind == "gamma":
            weights[name] = np.ones(dims, dtype=np.float32)
        elif kind in ("beta", "bias") or name.startswith("span/"):
            weights[name] = np.zeros(dims, dtype=np.float32)
        else:  # a projection: unit-variance outputs for unit-variance inputs, branch ends damped
            damping = RESIDUAL_SCALE if name.endswith(("output/weight", "ffn/out/weight")) else 1.0
            weights[name] = normal(dims, damping / np.sqrt(dims[0]))
    word = weights["embeddings/word"]
    for group in token_groups:
        ids = np.asarray(group, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= shape.vocab_size):
            raise HarnessError(f"token group ids must lie in [0, {shape.vocab_size})")
        word[ids] += normal((shape.hidden,), GROUP_DIRECTION_SCALE)
    return weights


# ---------------------------------------------------------------------------------------------------
# The graph


class _GraphWriter(GraphWriter):
    def __init__(self, weights: Mapping[str, Float32Array], shape: BertShape) -> None:
        super().__init__(weights)
        self.shape = shape

    def weight(self, name: str) -> str:
        return self.constant(name, self.weights[name])

    def layer_norm(self, x: str, prefix: str) -> str:
        gamma, beta = self.weight(f"{prefix}/gamma"), self.weight(f"{prefix}/beta")
        return self.node(
            "LayerNormalization", [x, gamma, beta], prefix, axis=-1, epsilon=LAYER_NORM_EPSILON
        )

    def dense(self, x: str, prefix: str) -> str:
        y = self.node("MatMul", [x, self.weight(f"{prefix}/weight")], f"{prefix}/matmul")
        return self.node("Add", [y, self.weight(f"{prefix}/bias")], f"{prefix}/add")

    def gelu(self, x: str, prefix: str) -> str:
        """x * 0.5 * (1 + erf(x / sqrt 2)): the pattern ONNX Runtime fuses into one Gelu."""
        sqrt2 = self.constant(f"{prefix}/sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
        one = self.constant(f"{prefix}/one", np.array(1.0, dtype=np.float32))
        half = self.constant(f"{prefix}/half", np.array(0.5, dtype=np.float32))
        erf = self.node("Erf", [self.node("Div", [x, sqrt2], f"{prefix}/div")], f"{prefix}/erf")
        y = self.node("Mul", [x, self.node("Add", [erf, one], f"{prefix}/add")], f"{prefix}/mul")
        return self.node("Mul", [y, half], prefix)

    def embeddings(self) -> str:
        positions = self.constant("position_ids", np.arange(SEQ_LENGTH, dtype=np.int64))
        word = self.node(
            "Gather", [self.weight("embeddings/word"), INPUT_IDS], "embeddings/word/gather"
        )
        position = self.node(
            "Gather", [self.weight("embeddings/position"), positions], "embeddings/position/gather"
        )
        token_type = self.node(
            "Gather",
            [self.weight("embeddings/token_type"), SEGMENT_IDS],
            "embeddings/token_type/gather",
        )
        x = self.node("Add", [word, position], "embeddings/add_position")
        x = self.node("Add", [x, token_type], "embeddings/add_token_type")
        return self.layer_norm(x, "embeddings/ln")

    def mask_bias(self) -> str:
        """(1 - input_mask) * -10000 as [N, 1, 1, 384], added to every head's attention scores."""
        mask = self.node("Cast", [INPUT_MASK], "mask/float", to=TensorProto.FLOAT)
        axes = self.constant("mask/axes", np.array([1, 2], dtype=np.int64))
        mask = self.node("Unsqueeze", [mask, axes], "mask/unsqueeze")
        one = self.constant("mask/one", np.array(1.0, dtype=np.float32))
        penalty = self.constant("mask/penalty", np.array(MASK_PENALTY, dtype=np.float32))
        return self.node("Mul", [self.node("Sub", [one, mask], "mask/sub"), penalty], "mask/bias")

    def attention(self, x: str, mask_bias: str, prefix: str) -> str:
        s = self.shape
        heads_shape = self.constant(
            f"{prefix}/heads_shape", np.array([0, 0, s.heads, s.head_size], dtype=np.int64)
        )
        merged_shape = self.constant(f"{prefix}/merged_shape", np.array([0, 0, s.hidden], np.int64))

        def split_heads(name: str, perm: list[int]) -> str:
            y = self.dense(x, f"{prefix}/{name}")
            y = self.node("Reshape", [y, heads_shape], f"{prefix}/{name}/reshape")
            return self.node("Transpose", [y], f"{prefix}/{name}/transpose", perm=perm)

        query = split_heads("query", [0, 2, 1, 3])  # [N, heads, S, d]
        key = split_heads("key", [0, 2, 3, 1])  # [N, heads, d, S]
        value = split_heads("value", [0, 2, 1, 3])
        scale = self.constant(f"{prefix}/scale", np.array(np.sqrt(s.head_size), dtype=np.float32))
        scores = self.node("MatMul", [query, key], f"{prefix}/scores")
        scores = self.node("Div", [scores, scale], f"{prefix}/scaled")
        scores = self.node("Add", [scores, mask_bias], f"{prefix}/masked")
        probs = self.node("Softmax", [scores], f"{prefix}/softmax", axis=-1)
        context = self.node("MatMul", [probs, value], f"{prefix}/context")
        context = self.node(
            "Transpose", [context], f"{prefix}/context/transpose", perm=[0, 2, 1, 3]
        )
        context = self.node("Reshape", [context, merged_shape], f"{prefix}/context/reshape")
        return self.dense(context, f"{prefix}/output")

    def encoder_layer(self, x: str, mask_bias: str, layer: int) -> str:
        p = f"layer{layer}"
        branch = self.attention(x, mask_bias, f"{p}/attention")
        x = self.layer_norm(
            self.node("Add", [x, branch], f"{p}/attention/residual"), f"{p}/attention/ln"
        )
        branch = self.gelu(self.dense(x, f"{p}/ffn/in"), f"{p}/ffn/gelu")
        branch = self.dense(branch, f"{p}/ffn/out")
        return self.layer_norm(self.node("Add", [x, branch], f"{p}/ffn/residual"), f"{p}/ffn/ln")

    def body(self) -> str:
        """The encoder: returns the name of the [N, 384, hidden] final hidden states."""
        x = self.embeddings()
        mask_bias = self.mask_bias()
        for layer in range(self.shape.layers):
            x = self.encoder_layer(x, mask_bias, layer)
        return x

    def span_head(self, hidden: str) -> None:
        """[N, 384, hidden] -> the two [N, 384] logit outputs."""
        logits = self.dense(hidden, "span")  # [N, 384, 2]
        for index, output in enumerate(OUTPUT_NAMES):
            which = self.constant(f"span/index{index}", np.array(index, dtype=np.int64))
            self.node("Gather", [logits, which], output, axis=2)

    def model(
        self, outputs: list[onnx.ValueInfoProto], doc: str, metadata: Mapping[str, str]
    ) -> onnx.ModelProto:
        inputs = [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", SEQ_LENGTH])
            for name in INPUT_NAMES
        ]
        graph = helper.make_graph(self.nodes, "bert_stand_in", inputs, outputs, self.initializers)
        model = make_model(graph, OPSET, doc=doc, metadata=metadata)
        return model


def body_graph(weights: Mapping[str, Float32Array], shape: BertShape) -> onnx.ModelProto:
    """The encoder alone, output FINAL_HIDDEN [N, 384, hidden]: what the span head is fitted on."""
    writer = _GraphWriter(weights, shape)
    hidden = writer.node("Identity", [writer.body()], FINAL_HIDDEN)
    output = helper.make_tensor_value_info(
        hidden, TensorProto.FLOAT, ["batch", SEQ_LENGTH, shape.hidden]
    )
    model = writer.model([output], "BERT stand-in encoder (build step only)", {})
    onnx.checker.check_model(model)
    return model


def span_model(
    weights: Mapping[str, Float32Array], shape: BertShape, seed: int, metadata: Mapping[str, str]
) -> onnx.ModelProto:
    """The whole stand-in with the official interface; `weights` holds the fitted span head."""
    writer = _GraphWriter(weights, shape)
    writer.span_head(writer.body())
    outputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", SEQ_LENGTH])
        for name in OUTPUT_NAMES
    ]
    properties = {
        "mlperf_harness.stand_in": "true",
        "mlperf_harness.seed": str(seed),
        "mlperf_harness.bert_shape": (
            f"{shape.layers}x{shape.hidden}, {shape.heads} heads, FFN {shape.intermediate}"
        ),
        **metadata,
    }
    doc = (
        "NOT the official MLPerf BERT-large: a small deterministic stand-in with its interface "
        f"(seed {seed}) that answers the generated SQuAD questions; no valid MLPerf result."
    )
    model = writer.model(outputs, doc, properties)
    onnx.checker.check_model(model)
    return model
