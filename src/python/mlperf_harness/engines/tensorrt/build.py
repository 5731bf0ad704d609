"""Build a TensorRT 10 engine from an ONNX model: the ONNX parser makes the network, the builder
config sets precision, workspace and one optimization profile for the batch dimension, a timing cache
shortens rebuilds, and the serialized engine is written to the build directory.

Precision as NVIDIA builds it: fp32 (with TF32 off, so fp32 means fp32), fp16, and int8 with fp16
allowed where int8 kernels do not exist or lose, calibrated by the entropy calibrator.

The timing cache (measured kernel timings) only speeds up building, it never changes what an engine
computes, so it is not part of the engine's key: one file per TensorRT version and GPU in the engine
cache root, read before the build and written after it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.backends.tensorrt.libraries import import_tensorrt
from mlperf_harness.engines.calibration import CalibrationSet
from mlperf_harness.engines.tensorrt.calibrator import CALIBRATION_BATCH, make_entropy_calibrator
from mlperf_harness.errors import HarnessError

ENGINE_FILE = "model.plan"
PRECISIONS = ("fp32", "fp16", "int8")
# The BuilderFlag names each precision sets: int8 with fp16 fallback, as NVIDIA's engines are built.
_PRECISION_FLAGS = {"fp32": (), "fp16": ("FP16",), "int8": ("INT8", "FP16")}

Shape = tuple[int, ...]


def precision_flags(precision: str) -> tuple[str, ...]:
    if precision not in _PRECISION_FLAGS:
        raise HarnessError(f"TensorRT builds {', '.join(PRECISIONS)} engines, not {precision!r}")
    return _PRECISION_FLAGS[precision]


def profile_shapes(input_shape: Sequence[int], batch_size: int) -> tuple[Shape, Shape, Shape]:
    """(min, opt, max) of the optimization profile: batch 1 to `batch_size`, tuned for the largest.

    The model's batch dimension must be dynamic (-1) and its other dimensions fixed.
    """
    shape = tuple(int(dim) for dim in input_shape)
    if batch_size < 1:
        raise HarnessError(f"an engine's batch size must be at least 1, got {batch_size}")
    if not shape or shape[0] != -1:
        raise HarnessError(
            f"the model's input shape {shape} has no dynamic batch dimension (-1 first): "
            "export the ONNX model with a dynamic batch"
        )
    if any(dim < 1 for dim in shape[1:]):
        raise HarnessError(f"the model's input shape {shape} is dynamic beyond the batch dimension")
    rest = shape[1:]
    return (1, *rest), (batch_size, *rest), (batch_size, *rest)


def timing_cache_path(cache_root: Path, tensorrt_version: str, device: str) -> Path:
    """One timing cache per TensorRT version and GPU: timings measured elsewhere do not apply."""
    label = re.sub(r"[^A-Za-z0-9._]+", "-", f"tensorrt-{tensorrt_version}-{device}").strip("-")
    return cache_root / "timing" / f"{label}.cache"


def _load_timing_cache(config: Any, path: Path) -> Any:
    """Attach the timing cache at `path` to `config`; a new one if it is absent or unusable (from
    another TensorRT, damaged). The returned object must live until the build is done."""
    data = b""
    try:
        data = path.read_bytes() if path.is_file() else b""
    except OSError as error:
        print(f"generate_engines: ignoring timing cache {path}: {error}", file=sys.stderr)
    if data:
        try:
            cache = config.create_timing_cache(data)
            if cache is not None and config.set_timing_cache(cache, ignore_mismatch=False):
                return cache
        except (RuntimeError, TypeError, ValueError) as error:
            print(f"generate_engines: timing cache {path}: {error}", file=sys.stderr)
        print(f"generate_engines: ignoring unusable timing cache {path}", file=sys.stderr)
    cache = config.create_timing_cache(b"")
    if cache is None or not config.set_timing_cache(cache, ignore_mismatch=False):
        raise HarnessError("TensorRT cannot create a timing cache")
    return cache


def _parse_onnx(trt: ModuleType, builder: Any, logger: Any, model_path: Path) -> tuple[Any, Any]:
    network = builder.create_network(0)  # TensorRT 10: every network has an explicit batch
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(model_path)):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)] or ["no details"]
        raise HarnessError(f"TensorRT cannot parse {model_path}: {'; '.join(errors)}")
    if network.num_inputs != 1:
        raise HarnessError(
            f"{model_path} has {network.num_inputs} inputs; the TensorRT builder takes models of one"
        )
    return network, parser  # the parser must live as long as the network


def build_engine(
    model_path: Path,
    out_dir: Path,
    *,
    precision: str,
    batch_size: int,
    workspace_mib: int,
    timing_cache: Path,
    calibration: CalibrationSet | None = None,
    calibration_cache: Path | None = None,
) -> str:
    """Build the engine into `out_dir` and return its file name."""
    flags = precision_flags(precision)
    if precision == "int8" and (calibration is None or calibration_cache is None):
        raise HarnessError(
            "an int8 TensorRT engine needs a calibration set and a calibration cache"
        )
    trt = import_tensorrt()
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network, _parser = _parse_onnx(trt, builder, logger, model_path)
    network_input = network.get_input(0)
    minimum, optimum, maximum = profile_shapes(tuple(network_input.shape), batch_size)

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, workspace_mib << 20)
    for flag in flags:
        config.set_flag(getattr(trt.BuilderFlag, flag))
    if precision == "fp32":
        config.clear_flag(trt.BuilderFlag.TF32)
    profile = builder.create_optimization_profile()
    profile.set_shape(network_input.name, minimum, optimum, maximum)
    if config.add_optimization_profile(profile) < 0:
        raise HarnessError(f"TensorRT refuses the optimization profile {minimum}..{maximum}")

    calibrator = None
    if precision == "int8":
        assert calibration is not None and calibration_cache is not None  # checked above
        calibration_shape = (CALIBRATION_BATCH, *minimum[1:])
        calibrator = make_entropy_calibrator(calibration, calibration_cache, calibration_shape)
        config.int8_calibrator = calibrator
        calibration_profile = builder.create_optimization_profile()
        calibration_profile.set_shape(
            network_input.name, calibration_shape, calibration_shape, calibration_shape
        )
        if not config.set_calibration_profile(calibration_profile):
            raise HarnessError(f"TensorRT refuses the calibration profile {calibration_shape}")

    timing = _load_timing_cache(config, timing_cache)
    try:
        serialized = builder.build_serialized_network(network, config)
    finally:
        if calibrator is not None:
            calibrator.free()
    if calibrator is not None and calibrator.error:
        raise HarnessError(calibrator.error)
    if serialized is None:
        raise HarnessError(
            f"TensorRT could not build a {precision} engine from {model_path} (its log above says why)"
        )
    with open(out_dir / ENGINE_FILE, "wb") as engine_file:
        engine_file.write(serialized)
    # The builder added what it measured to the attached cache: keep it for the next build.
    write_bytes_atomic(timing_cache, bytes((config.get_timing_cache() or timing).serialize()))
    return ENGINE_FILE
