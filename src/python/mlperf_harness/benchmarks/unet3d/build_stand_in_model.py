"""Build the 3D-UNet stand-in from preprocessed training cases: seeded weights, the output layer
fitted, and the held-out DICE of the whole model through the benchmark's sliding window.

The output layer (a 1x1x1 convolution, f0 features -> 3 logits per voxel) is fitted by multinomial
logistic regression (`resnet50.logistic_regression`, on standardised features) on voxels drawn
from every 128³ window of the training cases: up to VOXELS_PER_CLASS of each class per window, so
kidney and tumour are not drowned by background. The biases keep that near-balanced prior: shifting
them towards the true class shares (background ~95%) lowered the held-out tumour DICE (seed 0,
six held-out cases: 0.43 unshifted, 0.35 half-shifted, 0.19 fully shifted), since DICE rewards
finding the small classes more than it punishes a rim of false positives.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort

from mlperf_harness.accuracy.kits19 import dice_scores
from mlperf_harness.benchmarks.resnet50.logistic_regression import fit_softmax_regression
from mlperf_harness.benchmarks.unet3d.sliding_window import (
    Float32Array,
    UInt8Array,
    WindowRunner,
    sliding_window_labels,
    window_grid,
)
from mlperf_harness.benchmarks.unet3d.stand_in_model import (
    CLASSES,
    FEATURES_NAME,
    INPUT_NAME,
    OUTPUT_NAME,
    UNetWidth,
    features_model,
    random_weights,
    unet_model,
)
from mlperf_harness.errors import HarnessError

Float64Array = npt.NDArray[np.float64]
# A preprocessed case: image float32 and label uint8, both [D, H, W] or [1, D, H, W].
Case = tuple[Float32Array, UInt8Array]

VOXELS_PER_CLASS = 20_000  # per window: ~0.2 M training rows from four cases
HEAD_L2 = 1e-4  # on standardised features: the fit has 4-40 features and 10^5 rows
HEAD_ITERATIONS = 200
WINDOW_BATCH = 2  # windows per ONNX Runtime call at build


@dataclass(frozen=True)
class OutputLayer:
    weight: Float32Array  # [3, f0, 1, 1, 1]
    bias: Float32Array  # [3]
    voxels: int  # training rows of the fit
    class_voxels: tuple[int, int, int]  # of the training windows, per class (the true prior)


@dataclass(frozen=True)
class StandInUNet:
    model: onnx.ModelProto  # the official interface, output layer fitted
    layer: OutputLayer
    width: UNetWidth
    seed: int
    seconds: float

    def serialized(self) -> bytes:
        data: bytes = self.model.SerializeToString()
        return data

    def sha256(self) -> str:
        return hashlib.sha256(self.serialized()).hexdigest()


def session(model: onnx.ModelProto | bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.use_deterministic_compute = True
    options.log_severity_level = 3
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def _volume(array: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """[D, H, W] of a [D, H, W] or [1, D, H, W] array."""
    return array[0] if array.ndim == 4 and array.shape[0] == 1 else array


def fit_output_layer(
    features: onnx.ModelProto, cases: Iterable[Case], seed: int = 0
) -> OutputLayer:
    """Run `features` (output FEATURES_NAME) over every window of `cases` and fit the layer."""
    features_session = session(features)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    rows: list[Float32Array] = []
    targets: list[npt.NDArray[np.int64]] = []
    class_voxels = np.zeros(CLASSES, dtype=np.int64)
    for image, label in cases:
        volume, labels = _volume(image), _volume(label)
        grid = window_grid(volume.shape)
        for start in grid.starts():
            where = grid.slices(start)
            window = np.ascontiguousarray(volume[where][None, None])
            (output,) = features_session.run([FEATURES_NAME], {INPUT_NAME: window})
            voxels = np.asarray(output[0]).reshape(output.shape[1], -1).T  # [128³, f0]
            truth = labels[where].reshape(-1)
            class_voxels += np.bincount(truth, minlength=CLASSES)[:CLASSES]
            for cls in range(CLASSES):
                where_class = np.flatnonzero(truth == cls)
                if where_class.size == 0:
                    continue
                count = min(where_class.size, VOXELS_PER_CLASS)
                picked = rng.choice(where_class, count, replace=False)
                rows.append(voxels[picked])
                targets.append(np.full(count, cls, dtype=np.int64))
    if not rows:
        raise HarnessError("no training windows to fit the 3D-UNet output layer on")
    x = np.concatenate(rows).astype(np.float64)
    y = np.concatenate(targets)
    drawn = np.bincount(y, minlength=CLASSES)
    if np.any(drawn == 0):
        raise HarnessError(
            f"the training cases lack a class (voxels per class {drawn.tolist()}): "
            "nothing to fit the output layer to"
        )
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-6
    params = fit_softmax_regression((x - mean) / std, np.eye(CLASSES)[y], HEAD_L2, HEAD_ITERATIONS)
    width = x.shape[1]
    weight = params[: CLASSES * width].reshape(CLASSES, width) / std
    bias = params[CLASSES * width :] - weight @ mean
    return OutputLayer(
        weight=weight.reshape(CLASSES, width, 1, 1, 1).astype(np.float32),
        bias=bias.astype(np.float32),
        voxels=len(y),
        class_voxels=(int(class_voxels[0]), int(class_voxels[1]), int(class_voxels[2])),
    )


def build_stand_in_unet(
    training: Iterable[Case], width: UNetWidth, seed: int, metadata: dict[str, str]
) -> StandInUNet:
    """Seeded weights, the output layer fitted on `training`, as the official interface."""
    started = time.perf_counter()
    weights = random_weights(width, seed)
    layer = fit_output_layer(features_model(weights, width), training, seed)
    weights["output/weight"] = layer.weight
    weights["output/bias"] = layer.bias
    doc = (
        "NOT the official MLPerf 3D-UNet: the KiTS19 U-Net's topology at 1/"
        f"{width.divisor} width, seeded (seed {seed}), its output layer fitted to generated "
        "CT-like volumes; no valid MLPerf result."
    )
    properties = {
        "mlperf_harness.stand_in": "true",
        "mlperf_harness.seed": str(seed),
        "mlperf_harness.unet_filters": ",".join(str(f) for f in width.filters),
        **metadata,
    }
    model = unet_model(weights, width, doc, properties)
    return StandInUNet(model, layer, width, seed, time.perf_counter() - started)


def model_runner(model: onnx.ModelProto | bytes) -> WindowRunner:
    """A `sliding_window` runner of `model` through ONNX Runtime's CPU provider."""
    model_session = session(model)

    def run(windows: Float32Array) -> Float32Array:
        (logits,) = model_session.run([OUTPUT_NAME], {INPUT_NAME: windows})
        return np.asarray(logits, dtype=np.float32)

    return run


def segment(model: onnx.ModelProto | bytes, image: Float32Array) -> UInt8Array:
    """The labels [D, H, W] of a preprocessed volume by `model`, through the sliding window."""
    return sliding_window_labels(image, model_runner(model), WINDOW_BATCH)


def heldout_dice(
    model: onnx.ModelProto | bytes, cases: Iterable[Case]
) -> list[tuple[float, float]]:
    """(kidney, tumour) DICE of each case, as the benchmark's scorer computes it."""
    run = model_runner(model)
    scores = []
    for image, label in cases:
        labels = sliding_window_labels(image, run, WINDOW_BATCH)
        scores.append(dice_scores(labels, np.asarray(_volume(label), dtype=np.uint8)))
    return scores
