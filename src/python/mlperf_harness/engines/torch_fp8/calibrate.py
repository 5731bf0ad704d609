"""Each activation tensor's maximum absolute value over the calibration set: the FP8 engine's
per-tensor scales come from these.

The maxima are an artifact of their own, a small JSON file keyed by the model and the calibration
samples (like ONNX Runtime INT8's range cache): an engine rebuilt for another batch size, kernel or
torch version reuses them instead of calibrating again. They are computed with plain ONNX Runtime
inference in fp32 (no quantization tooling, whose API differs between the versions GPU hosts
carry), over the model as given, before any folding: the tensors read in FP8 keep their names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from tqdm import tqdm

from mlperf_harness.engines.amax_artifact import read_amax, write_amax
from mlperf_harness.engines.calibration import Calibration
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled

METHOD = "amax-fp32"
BATCH = 8


def amax_key(model_sha256: str, calibration: Calibration) -> str:
    identity = f"{model_sha256}:{calibration.sha256}:{METHOD}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def activation_amax(
    model_path: Path, tensors: Sequence[str], calibration: Calibration, cache: Path
) -> dict[str, float]:
    """The maximum |value| of each of `tensors` over the calibration samples: read from `cache`,
    or computed and written there (a damaged or incomplete cache is recomputed, with a notice)."""
    cached = read_amax(cache, tensors, {"method": METHOD}, "calibration maxima")
    if cached is not None:
        return cached
    amax = _compute(model_path, tensors, calibration)
    write_amax(cache, amax, {"method": METHOD, "calibration": calibration.description})
    return amax


def _compute(
    model_path: Path, tensors: Sequence[str], calibration: Calibration
) -> dict[str, float]:
    model = onnx.load(str(model_path))
    known_outputs = {value.name for value in model.graph.output}
    produced = {name for node in model.graph.node for name in node.output}
    weights = {init.name for init in model.graph.initializer}
    input_names = [value.name for value in model.graph.input if value.name not in weights]
    unknown = [name for name in tensors if name not in produced and name not in input_names]
    if unknown:
        raise HarnessError(
            f"the model computes no tensor {unknown[0]!r} to calibrate"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
        )
    for name in tensors:
        if name in produced and name not in known_outputs:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep names
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    wanted = [name for name in tensors if name not in input_names]
    amax = dict.fromkeys(tensors, 0.0)
    feeds = calibration.feeds(BATCH, input_names)
    bar = tqdm(feeds, desc="FP8 calibration", unit="batch", disable=bar_disabled(True))
    for feed in bar:
        for name in tensors:
            if name in feed:
                amax[name] = max(amax[name], float(np.abs(feed[name]).max()))
        for name, value in zip(wanted, session.run(wanted, feed), strict=True):
            amax[name] = max(amax[name], float(np.abs(value).max()))
    return amax
