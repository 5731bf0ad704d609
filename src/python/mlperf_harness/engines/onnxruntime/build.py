"""Build ONNX Runtime engines: an FP32 graph-optimized model, and an INT8 model by static QDQ
quantization calibrated on a calibration set.

INT8 uses uint8 activations and int8 per-channel weights: on x86 CPUs that runs about 3x faster
than FP32, where the quantizer's default (int8 activations) ran no faster (see docs/performance.md).
Which operators are quantized is the caller's choice: every one the quantizer knows (ResNet-50), or
only MatMul (BERT: its embedding Gathers, LayerNorms and Softmax stay fp32, as in MLPerf's int8
BERT), or only Conv less some named nodes left in fp32 (RetinaNet: its class-logit convolutions,
whose outputs the postprocessing thresholds and ranks).
The tensor ranges from calibration are an artifact of their own (a JSON cache keyed by the model and
the calibration set), so an engine rebuilt for another reason does not calibrate again; a damaged
cache is recomputed, with a notice.

Everything a build writes goes to its output (staging) directory, the quantizer's temporary folders
included: a killed build leaves nothing in /tmp or beside the model, and the engine cache removes its
half-built directory at the next build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.calibrate import load_tensors_data

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.engines.calibration import Calibration, Feed
from mlperf_harness.errors import HarnessError

FP32_FILE = "model_fp32_opt.onnx"
INT8_FILE = "model_int8_qdq.onnx"
CALIBRATION_METHOD = "minmax-strided"
# Samples per calibrator call and per pass. The calibrator makes every tensor a model output and
# keeps a pass's outputs until its ranges are merged: at 10 a call and 20 a pass RetinaNet's 800x800
# stand-in took its int8 build to 9.9 GB. Min and max do not depend on either, only memory does.
CALIBRATION_BATCH = 2
CALIBRATION_STRIDE = 2


def build_fp32(model_path: Path, out_dir: Path) -> str:
    options = ort.SessionOptions()
    # EXTENDED, not ALL: the layout transforms of ALL are tied to the machine that ran them.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(out_dir / FP32_FILE)
    try:
        ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # ONNX Runtime's own exception types derive from Exception only
        raise HarnessError(
            f"ONNX Runtime cannot use model {model_path}: {_reason(error)}"
        ) from error
    return FP32_FILE


def _reason(error: Exception) -> str:
    """ONNX Runtime's message without its code, C++ location and signature: the part that says
    what is wrong (e.g. "Unsupported model IR version: 13, max supported IR version: 11")."""
    text = next(iter(str(error).strip().splitlines()), "") or type(error).__name__
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"^Load model from .*? failed:", "", text)
    text = re.sub(r"^\S+\.(?:cc|h):\d+ .*?\) ", "", text)
    return text.strip()


def calibration_key(
    model_sha256: str, calibration: Calibration, op_types: Sequence[str] | None = None
) -> str:
    """The range cache's key: the ranges calibrated depend on the operators quantized too. Nodes
    left in fp32 are not part of it: the calibrator records the same tensors with or without them
    (quantize_static does not pass its nodes_to_exclude on to the calibrator)."""
    identity = f"{model_sha256}:{calibration.sha256}:{CALIBRATION_METHOD}:uint8"
    if op_types is not None:
        identity += ":" + ",".join(sorted(op_types))
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


class _StridedReader(CalibrationDataReader):  # type: ignore[misc]
    """Feeds calibration batches to ONNX Runtime's calibrator (strided, so it keeps few outputs)."""

    def __init__(self, batches: list[Feed]) -> None:
        self._batches = batches
        self._start, self._end = 0, len(batches)
        self._position = 0

    def get_next(self) -> Feed | None:
        if self._position >= min(self._end, len(self._batches)):
            return None
        batch = self._batches[self._position]
        self._position += 1
        return batch

    def __len__(self) -> int:
        return len(self._batches)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._start, self._end = start_index, end_index
        self._position = start_index

    def rewind(self) -> None:
        self._position = self._start


def build_int8(
    model_path: Path,
    out_dir: Path,
    calibration: Calibration,
    calibration_cache: Path,
    op_types: Sequence[str] | None = None,
    fp32_nodes: Sequence[str] = (),
) -> str:
    """Quantize into out_dir; calibration_cache is the shared range cache (read, or written once
    computed). `op_types`: the operators to quantize (None: all the quantizer knows); `fp32_nodes`:
    nodes, by name, left in fp32 (each must be in the model: a recipe naming a node that is not
    there would quietly quantize what it meant to keep)."""
    graph = onnx.load(str(model_path), load_external_data=False).graph
    missing = sorted(set(fp32_nodes) - {node.name for node in graph.node})
    if missing:
        raise HarnessError(
            f"int8 was to leave node {missing[0]!r} in fp32, but {model_path} has no node of "
            f"that name ({len(missing)} missing)"
        )
    weights = {tensor.name for tensor in graph.initializer}
    input_names = [value.name for value in graph.input if value.name not in weights]
    # The quantizer writes "<model>-inferred.onnx" beside the model it is given: give it a link in
    # out_dir, so that nothing is written beside the model (whose directory may be read-only).
    source = out_dir / f".source{model_path.suffix}"
    source.symlink_to(model_path.resolve())
    # quantize_static reads ranges from, and writes them to, this copy: it writes with mode 0600,
    # and the shared cache must be readable by others (the umask decides, see atomic.py).
    local_cache = out_dir / ".calibration.json"
    cached = _read_calibration_cache(calibration_cache)
    reader = None
    if cached is not None:
        local_cache.write_bytes(cached)
    else:
        reader = _StridedReader(calibration.feeds(CALIBRATION_BATCH, input_names))
    with _temporary_files_in(out_dir):
        _quantize(source, out_dir / INT8_FILE, reader, local_cache, op_types, fp32_nodes)
    if cached is None:
        write_bytes_atomic(calibration_cache, local_cache.read_bytes())
    local_cache.unlink()
    for scratch_file in out_dir.glob(".source*"):
        scratch_file.unlink()
    return INT8_FILE


def _read_calibration_cache(path: Path) -> bytes | None:
    """The cache's bytes if quantize_static can use them; None (with a notice if the file is
    there but damaged) when the ranges must be computed."""
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
        if json.loads(data).get("smooth_quant", False):
            raise ValueError("made with SmoothQuant")
        ranges = load_tensors_data(path)
        if ranges.calibration_method != CalibrationMethod.MinMax:
            raise ValueError(f"made with {ranges.calibration_method}")
        if not ranges.data:
            raise ValueError("no tensor ranges")
        for name, tensor in ranges.data.items():
            low, high = tensor.range_value
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise ValueError(f"range of {name} is not finite")
    except Exception as error:  # any malformed content: json, keys, types, values
        print(
            f"calibration cache {path} is damaged ({type(error).__name__}: {error}); "
            "recomputing it",
            file=sys.stderr,
        )
        return None
    return data


@contextlib.contextmanager
def _temporary_files_in(directory: Path) -> Iterator[None]:
    """Make tempfile put its files in directory: the quantizer's "ort.quant.*" folders (about
    100 MB for ResNet-50) then go where the engine cache cleans up after a killed build, not /tmp.
    The build runs on the main thread and nothing else makes temporary files meanwhile."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(directory)
    try:
        yield
    finally:
        tempfile.tempdir = saved


def _stride(reader: _StridedReader | None) -> int:
    """Batches per calibration pass: 20 samples at a time where the batch count allows (the
    quantizer wants a stride that divides it; min and max do not depend on it, only memory does)."""
    wanted = CALIBRATION_STRIDE // CALIBRATION_BATCH
    batches = len(reader) if reader is not None else wanted
    return max(stride for stride in range(1, wanted + 1) if batches % stride == 0)


def _quantize(
    model_path: Path,
    out_path: Path,
    reader: _StridedReader | None,
    calibration_cache: Path,
    op_types: Sequence[str] | None,
    fp32_nodes: Sequence[str],
) -> None:
    quantize_static(
        model_path,
        out_path,
        calibration_data_reader=reader,
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=None if op_types is None else list(op_types),
        nodes_to_exclude=list(fp32_nodes),
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"CalibStridedMinMax": _stride(reader)},
        calibration_cache_path=calibration_cache,
    )
