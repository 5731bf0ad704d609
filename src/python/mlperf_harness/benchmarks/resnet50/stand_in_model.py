"""The embedded default model: a deterministic ResNet-50 v1.5 that really classifies generated images.

With no official model at hand the harness runs this stand-in. It has the official model's
architecture and interface (the cost per image is the real one) and classifies the ten generated
classes of `datasets.imagenet.synthetic`. The recipe is DESIGN.md's ("The stand-in model: what was
tried"), each step there for a measured reason:

1. Seeded random convolution weights (He-normal).
2. Batch-norm running statistics from one training-mode pass over ~64 generated images (each batch
   norm normalises with its batch's statistics, which become the running statistics), then folded
   into the convolutions. Default statistics made INT8 collapse to chance.
3. Each bottleneck's last batch-norm scale damped to 0.3: undamped residual branches lose accuracy
   with depth and leave margins so small that INT8 flips predictions.
4. The 1001-way head fitted by multinomial logistic regression on standardised pooled features of
   ~600 generated training images. Row 0 is background as in the official model, so ImageNet label L
   is output index L + 1; rows 1..K are the K classes, the other rows have zero weight and a bias
   below the smallest fitted logit, so they never win.

Interface of the official MLPerf resnet50_v1.onnx (converted from TensorFlow): input `input_tensor:0`
float32 [N, 3, 224, 224] (MLPerf reference preprocessing, NCHW), outputs `ArgMax:0` (int64 [N], the
arg max over the 1001 classes; MLPerf's reference subtracts 1) and `softmax_tensor:0` (float32
[N, 1001]). The batch dimension is dynamic.

The build is deterministic on one machine: the same seed gives bit-identical .onnx bytes (weights
come from NumPy's seeded generator; statistics and features from ONNX Runtime with deterministic
compute). Another CPU may round differently in ONNX Runtime's kernels, so bytes may differ there.
"""

from __future__ import annotations

import abc
import hashlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from tqdm import tqdm

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks.resnet50.logistic_regression import fit_softmax_regression
from mlperf_harness.datasets.imagenet import synthetic
from mlperf_harness.datasets.imagenet.layout import parse_val_map
from mlperf_harness.datasets.imagenet.transform import OUTPUT_SIZE, preprocess_file
from mlperf_harness.errors import HarnessError
from mlperf_harness.onnx_model import make_model
from mlperf_harness.progress import bar_disabled

Float32Array = npt.NDArray[np.float32]
Float64Array = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]

# The official model's interface.
INPUT_NAME = "input_tensor:0"
SOFTMAX_OUTPUT = "softmax_tensor:0"
ARGMAX_OUTPUT = "ArgMax:0"
NUM_OUTPUTS = 1001  # index 0: background
LABEL_OFFSET = 1  # output index = ImageNet label + LABEL_OFFSET
OPSET = 13  # QDQ quantization with per-channel weights needs 13+; TensorRT 10 reads it

# ResNet-50 v1.5: bottleneck blocks per stage, their inner widths (outputs are 4x), stride on the 3x3.
STAGE_BLOCKS = (3, 4, 6, 3)
STAGE_WIDTHS = (64, 128, 256, 512)
EXPANSION = 4
STEM_WIDTH = 64
FEATURE_WIDTH = STAGE_WIDTHS[-1] * EXPANSION  # 2048

RESIDUAL_BN_SCALE = 0.3  # gamma of each bottleneck's last batch norm (step 3 above)
BN_EPSILON = 1e-5
HEAD_L2 = 1e-3  # L2 penalty of the logistic regression, on standardised features
HEAD_ITERATIONS = 100  # L-BFGS iterations at most: held-out margins stop changing by ~50
HEAD_OTHER_ROWS_MARGIN = 10.0  # how far below the smallest fitted logit the unused rows' bias lies
BATCH_SIZE = 32  # images per ONNX Runtime call while extracting features and evaluating
REQUIRED_TOP1 = 0.90  # below this the stand-in does not do its job

MODEL_FILE_NAME = "resnet50_v1_stand_in.onnx"
_WEIGHT_STREAM = 0  # SeedSequence key of the convolution weights, apart from the image streams


@dataclass(frozen=True)
class ImageCounts:
    """How many generated images each step uses (tests pass smaller ones)."""

    bn_statistics: int = 64  # the first images of the training split
    train: int = 600
    calibration: int = 100  # not used by the FP32 build; generated for INT8 calibration
    validation: int = 300

    def check(self) -> None:
        if min(self.bn_statistics, self.train, self.calibration, self.validation) < 1:
            raise HarnessError(f"every image count must be at least 1, got {self}")
        if self.bn_statistics > self.train:
            raise HarnessError(
                f"batch-norm statistics use the first training images: need bn_statistics <= "
                f"train, got {self.bn_statistics} > {self.train}"
            )


@dataclass(frozen=True)
class StandInReport:
    """What a build produced and what it measured."""

    model_path: Path
    seed: int
    sha256: str
    heldout_top1: float  # FP32, on the held-out validation split, through the written .onnx
    heldout_correct: int
    heldout_count: int
    train_top1: float  # of the fitted head on its own training features (a diagnostic)
    val_maps: Mapping[str, Path]  # split name -> its val_map.txt
    seconds: float

    @property
    def passed(self) -> bool:
        return self.heldout_top1 >= REQUIRED_TOP1


# ---------------------------------------------------------------------------------------------------
# Architecture


@dataclass(frozen=True)
class ConvSpec:
    """One convolution and the batch norm after it."""

    name: str
    in_channels: int
    out_channels: int
    kernel: int
    stride: int
    bn_scale: float  # the batch norm's gamma; its beta is 0

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        return (self.out_channels, self.in_channels, self.kernel, self.kernel)


@dataclass(frozen=True)
class Bottleneck:
    conv1: ConvSpec  # 1x1 reduce
    conv2: ConvSpec  # 3x3, carries the stride (v1.5)
    conv3: ConvSpec  # 1x1 expand, damped batch norm
    shortcut: ConvSpec | None  # 1x1 projection where shape changes


def _bottlenecks() -> list[Bottleneck]:
    blocks = []
    in_channels = STEM_WIDTH
    for stage, (count, width) in enumerate(zip(STAGE_BLOCKS, STAGE_WIDTHS, strict=True), start=1):
        for index in range(count):
            stride = 2 if stage > 1 and index == 0 else 1
            out_channels = width * EXPANSION
            prefix = f"stage{stage}/block{index + 1}"
            shortcut = None
            if index == 0:
                shortcut = ConvSpec(f"{prefix}/shortcut", in_channels, out_channels, 1, stride, 1.0)
            blocks.append(
                Bottleneck(
                    conv1=ConvSpec(f"{prefix}/conv1", in_channels, width, 1, 1, 1.0),
                    conv2=ConvSpec(f"{prefix}/conv2", width, width, 3, stride, 1.0),
                    conv3=ConvSpec(f"{prefix}/conv3", width, out_channels, 1, 1, RESIDUAL_BN_SCALE),
                    shortcut=shortcut,
                )
            )
            in_channels = out_channels
    return blocks


STEM = ConvSpec("stem/conv", 3, STEM_WIDTH, 7, 2, 1.0)
BOTTLENECKS = tuple(_bottlenecks())


def all_convs() -> list[ConvSpec]:
    """Every convolution, in graph order (the order weights are drawn in)."""
    convs = [STEM]
    for block in BOTTLENECKS:
        convs += [block.conv1, block.conv2, block.conv3]
        if block.shortcut is not None:
            convs.append(block.shortcut)
    return convs


def random_conv_weights(seed: int) -> dict[str, Float32Array]:
    """He-normal weights for every convolution, drawn from one seeded stream in graph order."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, _WEIGHT_STREAM]))
    weights = {}
    for conv in all_convs():
        fan_in = conv.in_channels * conv.kernel * conv.kernel
        draw = rng.standard_normal(conv.weight_shape, dtype=np.float32)
        weights[conv.name] = draw * np.float32(np.sqrt(2.0 / fan_in))
    return weights


# ---------------------------------------------------------------------------------------------------
# Graph writing


@dataclass(frozen=True)
class BnStatistics:
    mean: Float64Array
    var: Float64Array


class _GraphWriter(abc.ABC):
    """Emits ResNet-50's nodes; subclasses decide how a convolution and its batch norm are written."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []

    def constant(self, name: str, value: npt.NDArray[np.generic]) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: Sequence[str], output: str, **attributes: Any) -> str:
        self.nodes.append(helper.make_node(op, list(inputs), [output], name=output, **attributes))
        return output

    @abc.abstractmethod
    def conv_bn(self, x: str, conv: ConvSpec) -> str:
        """Emit `conv` and its batch norm on tensor `x`; return the output tensor's name."""

    def conv_bn_relu(self, x: str, conv: ConvSpec) -> str:
        return self.node("Relu", [self.conv_bn(x, conv)], f"{conv.name}/relu")

    def body(self, x: str) -> str:
        """Stem, four stages, global average pool: returns the [N, 2048] feature tensor's name."""
        x = self.conv_bn_relu(x, STEM)
        x = self.node(
            "MaxPool", [x], "stem/maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        )
        for block in BOTTLENECKS:
            branch = self.conv_bn_relu(x, block.conv1)
            branch = self.conv_bn_relu(branch, block.conv2)
            branch = self.conv_bn(branch, block.conv3)
            shortcut = x if block.shortcut is None else self.conv_bn(x, block.shortcut)
            prefix = block.conv1.name.rsplit("/", 1)[0]
            x = self.node("Add", [branch, shortcut], f"{prefix}/add")
            x = self.node("Relu", [x], f"{prefix}/relu")
        x = self.node("GlobalAveragePool", [x], "pool")
        return self.node("Flatten", [x], "features", axis=1)

    def model(self, doc: str, metadata: Mapping[str, str]) -> onnx.ModelProto:
        batch_input = helper.make_tensor_value_info(
            INPUT_NAME, TensorProto.FLOAT, ["batch", 3, OUTPUT_SIZE, OUTPUT_SIZE]
        )
        graph = helper.make_graph(
            self.nodes, "resnet50_v1_5_stand_in", [batch_input], self.outputs, self.initializers
        )
        model = make_model(graph, OPSET, doc=doc, metadata=metadata)
        onnx.checker.check_model(model)
        return model


class _TrainingModeWriter(_GraphWriter):
    """Batch norm in training mode: normalise each batch by its own statistics, output them."""

    def __init__(self, weights: Mapping[str, Float32Array]) -> None:
        super().__init__()
        self.weights = weights
        self.statistics_outputs: list[tuple[str, str, str]] = []  # (conv name, mean, var)

    def _batch_channel_mean(self, x: str, output: str) -> str:
        """Mean over batch and space per channel, [1, C, 1, 1]. GlobalAveragePool, then the batch:
        the whole pass ran ~1.7x faster in ONNX Runtime so than with ReduceMean over (0, 2, 3)."""
        pooled = self.node("GlobalAveragePool", [x], f"{output}/pool")
        return self.node("ReduceMean", [pooled], output, axes=[0], keepdims=1)

    def conv_bn(self, x: str, conv: ConvSpec) -> str:
        n = conv.name
        y = self.node(
            "Conv",
            [x, self.constant(f"{n}/weight", self.weights[n])],
            f"{n}/conv",
            kernel_shape=[conv.kernel, conv.kernel],
            strides=[conv.stride, conv.stride],
            pads=[conv.kernel // 2] * 4,
        )
        mean = self._batch_channel_mean(y, f"{n}/batch_mean")
        centred = self.node("Sub", [y, mean], f"{n}/centred")
        square = self.node("Mul", [centred, centred], f"{n}/square")
        var = self._batch_channel_mean(square, f"{n}/batch_var")
        eps = self.constant(f"{n}/eps", np.array(BN_EPSILON, dtype=np.float32))
        std = self.node("Sqrt", [self.node("Add", [var, eps], f"{n}/var_eps")], f"{n}/std")
        gamma = self.constant(f"{n}/gamma", np.array(conv.bn_scale, dtype=np.float32))
        scale = self.node("Div", [gamma, std], f"{n}/scale")
        for name in (mean, var):
            shape = [1, conv.out_channels, 1, 1]
            self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        self.statistics_outputs.append((n, mean, var))
        return self.node("Mul", [centred, scale], f"{n}/bn")


class _FoldedWriter(_GraphWriter):
    """Inference mode: each batch norm folded into the convolution before it (weights and bias)."""

    def __init__(
        self, weights: Mapping[str, Float32Array], statistics: Mapping[str, BnStatistics]
    ) -> None:
        super().__init__()
        self.weights = weights
        self.statistics = statistics

    def conv_bn(self, x: str, conv: ConvSpec) -> str:
        n = conv.name
        stats = self.statistics[n]
        scale = conv.bn_scale / np.sqrt(stats.var + BN_EPSILON)  # float64: one rounding at the end
        weight = (self.weights[n] * scale[:, None, None, None]).astype(np.float32)
        bias = (-stats.mean * scale).astype(np.float32)  # beta is 0
        return self.node(
            "Conv",
            [x, self.constant(f"{n}/weight", weight), self.constant(f"{n}/bias", bias)],
            f"{n}/conv",
            kernel_shape=[conv.kernel, conv.kernel],
            strides=[conv.stride, conv.stride],
            pads=[conv.kernel // 2] * 4,
        )


def training_mode_graph(weights: Mapping[str, Float32Array]) -> tuple[onnx.ModelProto, list[str]]:
    """The body with batch norm in training mode; its outputs are every batch norm's mean and var."""
    writer = _TrainingModeWriter(weights)
    writer.body(INPUT_NAME)
    names = [name for name, _, _ in writer.statistics_outputs]
    return writer.model("batch-norm statistics pass (build step only)", {}), names


def features_graph(
    weights: Mapping[str, Float32Array], statistics: Mapping[str, BnStatistics]
) -> onnx.ModelProto:
    """The folded body alone: output `features` [N, 2048], the pooled input of the head."""
    writer = _FoldedWriter(weights, statistics)
    features = writer.body(INPUT_NAME)
    writer.outputs.append(
        helper.make_tensor_value_info(features, TensorProto.FLOAT, ["batch", FEATURE_WIDTH])
    )
    return writer.model("feature extractor (build step only)", {})


def classifier_graph(
    weights: Mapping[str, Float32Array],
    statistics: Mapping[str, BnStatistics],
    head_weight: Float32Array,
    head_bias: Float32Array,
    seed: int,
) -> onnx.ModelProto:
    """The stand-in model: folded body, 1001-way dense head, softmax and arg max (official names)."""
    writer = _FoldedWriter(weights, statistics)
    features = writer.body(INPUT_NAME)
    logits = writer.node(
        "Gemm",
        [
            features,
            writer.constant("head/weight", head_weight),
            writer.constant("head/bias", head_bias),
        ],
        "logits",
        transB=1,
    )
    writer.node("Softmax", [logits], SOFTMAX_OUTPUT, axis=1)
    writer.node("ArgMax", [logits], ARGMAX_OUTPUT, axis=1, keepdims=0)
    writer.outputs += [
        helper.make_tensor_value_info(SOFTMAX_OUTPUT, TensorProto.FLOAT, ["batch", NUM_OUTPUTS]),
        helper.make_tensor_value_info(ARGMAX_OUTPUT, TensorProto.INT64, ["batch"]),
    ]
    labels = ",".join(str(label) for label in synthetic.IMAGENET_LABELS)
    metadata = {
        "mlperf_harness.stand_in": "true",
        "mlperf_harness.seed": str(seed),
        "mlperf_harness.imagenet_labels": labels,
        "mlperf_harness.label_offset": str(LABEL_OFFSET),
    }
    doc = (
        "NOT the official MLPerf ResNet-50: a deterministic stand-in of the same architecture "
        f"(seed {seed}) that classifies the generated image classes; no valid MLPerf result."
    )
    return writer.model(doc, metadata)


# ---------------------------------------------------------------------------------------------------
# Running graphs


def _session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.use_deterministic_compute = True
    options.log_severity_level = 3  # warnings about unused initialisers etc. are noise here
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def _batches(paths: Sequence[Path], batch_size: int) -> Iterator[Float32Array]:
    for start in range(0, len(paths), batch_size):
        yield np.stack([preprocess_file(path) for path in paths[start : start + batch_size]])


def _split_files(val_map: Path) -> tuple[list[Path], Int64Array]:
    """Image paths and ImageNet labels of one image set."""
    entries = parse_val_map(val_map)
    paths = [val_map.parent / name for name, _ in entries]
    return paths, np.array([label for _, label in entries], dtype=np.int64)


def bn_statistics(
    weights: Mapping[str, Float32Array], images: Float32Array
) -> dict[str, BnStatistics]:
    """One training-mode pass over `images` (one batch): every batch norm's mean and variance."""
    model, names = training_mode_graph(weights)
    results = _session(model).run(None, {INPUT_NAME: images})
    statistics = {}
    for index, name in enumerate(names):
        mean, var = results[2 * index], results[2 * index + 1]
        statistics[name] = BnStatistics(
            mean=np.asarray(mean, dtype=np.float64).reshape(-1),
            var=np.asarray(var, dtype=np.float64).reshape(-1),
        )
    return statistics


def extract_features(
    model: onnx.ModelProto, paths: Sequence[Path], progress: bool, desc: str
) -> Float64Array:
    """Run the feature graph over preprocessed images: [len(paths), 2048] float64."""
    session = _session(model)
    chunks = []
    with tqdm(total=len(paths), desc=desc, unit="img", disable=bar_disabled(progress)) as bar:
        for batch in _batches(paths, BATCH_SIZE):
            chunks.append(np.asarray(session.run(None, {INPUT_NAME: batch})[0], dtype=np.float64))
            bar.update(len(batch))
    return np.concatenate(chunks)


def measure_top1(
    model_path: Path, val_map: Path, progress: bool = True, desc: str = "evaluate held-out"
) -> tuple[int, int]:
    """(correct, count) of a model file with the official interface on one image set."""
    paths, labels = _split_files(val_map)
    session = _session(model_path)
    correct = 0
    with tqdm(total=len(paths), desc=desc, unit="img", disable=bar_disabled(progress)) as bar:
        done = 0
        for batch in _batches(paths, BATCH_SIZE):
            (argmax,) = session.run([ARGMAX_OUTPUT], {INPUT_NAME: batch})
            predicted = np.asarray(argmax).reshape(-1) - LABEL_OFFSET
            correct += int(np.sum(predicted == labels[done : done + len(batch)]))
            done += len(batch)
            bar.update(len(batch))
    return correct, len(paths)


# ---------------------------------------------------------------------------------------------------
# The head: multinomial logistic regression (logistic_regression.py), its rows placed as ImageNet's


@dataclass(frozen=True)
class Head:
    weight: Float32Array  # [1001, 2048], applied to the raw pooled features
    bias: Float32Array  # [1001]
    train_top1: float


def fit_head(features: Float64Array, labels: Int64Array) -> Head:
    """Fit the classes' rows on standardised features, then fold the standardisation in."""
    classes = len(synthetic.IMAGENET_LABELS)
    class_of_label = {label: k for k, label in enumerate(synthetic.IMAGENET_LABELS)}
    targets = np.zeros((len(labels), classes))
    targets[np.arange(len(labels)), [class_of_label[int(label)] for label in labels]] = 1.0
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    # Channels that never vary (dead after the last ReLU) are left unscaled: they carry nothing.
    std = np.where(std > 1e-6 * max(float(std.max()), 1e-30), std, 1.0)
    standardised = (features - mean) / std
    params = fit_softmax_regression(standardised, targets, HEAD_L2, HEAD_ITERATIONS)
    width = features.shape[1]
    weight = params[: classes * width].reshape(classes, width)
    bias = params[classes * width :]
    logits = standardised @ weight.T + bias
    train_top1 = float(np.mean(logits.argmax(axis=1) == targets.argmax(axis=1)))
    # w . (f - mean) / std + b  ==  (w / std) . f + (b - (w / std) . mean)
    folded_weight = weight / std
    folded_bias = bias - folded_weight @ mean
    full_weight = np.zeros((NUM_OUTPUTS, width))
    full_bias = np.full(NUM_OUTPUTS, float(logits.min()) - HEAD_OTHER_ROWS_MARGIN)
    rows = [label + LABEL_OFFSET for label in synthetic.IMAGENET_LABELS]
    full_weight[rows] = folded_weight
    full_bias[rows] = folded_bias
    return Head(full_weight.astype(np.float32), full_bias.astype(np.float32), train_top1)


# ---------------------------------------------------------------------------------------------------
# The build


def generate_image_sets(
    work_dir: Path, seed: int, counts: ImageCounts, progress: bool = True
) -> dict[str, Path]:
    """Generate every split under `work_dir / "images"`; return split name -> val_map.txt."""
    sizes = {
        "train": counts.train,
        "calibration": counts.calibration,
        "validation": counts.validation,
    }
    root = work_dir / "images"
    return {
        split: synthetic.generate_split(root, split, sizes[split], seed, progress=progress)
        for split in synthetic.SPLITS
    }


def build_stand_in_model(
    out_path: Path,
    work_dir: Path,
    seed: int = 0,
    counts: ImageCounts | None = None,
    progress: bool = True,
) -> StandInReport:
    """Generate the image sets, build the stand-in model, write it to `out_path` and measure it.

    The model is written atomically; its held-out top-1 is measured on the written bytes.
    """
    started = time.perf_counter()
    counts = counts or ImageCounts()
    counts.check()
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    val_maps = generate_image_sets(work_dir, seed, counts, progress)

    weights = random_conv_weights(seed)
    train_paths, train_labels = _split_files(val_maps["train"])
    with tqdm(
        total=1, desc="batch-norm statistics", unit="pass", disable=bar_disabled(progress)
    ) as bar:
        bn_images = np.stack([preprocess_file(p) for p in train_paths[: counts.bn_statistics]])
        statistics = bn_statistics(weights, bn_images)
        bar.update()

    features = extract_features(
        features_graph(weights, statistics), train_paths, progress, "training features"
    )
    head = fit_head(features, train_labels)
    model_bytes = classifier_graph(
        weights, statistics, head.weight, head.bias, seed
    ).SerializeToString()

    # Measure the very bytes that are installed: write beside the target, measure, then rename.
    out_path.parent.mkdir(parents=True, exist_ok=True)
    staging = out_path.with_name(f".{out_path.name}.{os.getpid()}.tmp")
    write_bytes_atomic(staging, model_bytes)
    try:
        correct, count = measure_top1(staging, val_maps["validation"], progress)
        os.replace(staging, out_path)
    finally:
        staging.unlink(missing_ok=True)
    return StandInReport(
        model_path=out_path,
        seed=seed,
        sha256=hashlib.sha256(model_bytes).hexdigest(),
        heldout_top1=correct / count,
        heldout_correct=correct,
        heldout_count=count,
        train_top1=head.train_top1,
        val_maps=MappingProxyType(val_maps),
        seconds=time.perf_counter() - started,
    )
