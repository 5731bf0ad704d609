"""The TensorRT engine for a model, precision and batch size: found in the cache by its key, else built.

The key covers everything that changes the engine: the model, precision (and so the builder flags),
the optimization profile (the engine batch size), the workspace limit, the TensorRT version, the GPU
(name and compute capability), the builder's code and, for int8, the calibration images. engine.json
records them beside the engine. The same EngineCache serves every backend.
"""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.backends.tensorrt import libraries
from mlperf_harness.backends.tensorrt.cuda import gpu_device_label
from mlperf_harness.engines import calibration as calibration_module
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import CalibrationSet
from mlperf_harness.engines.spec import EngineSpec, source_sha256
from mlperf_harness.engines.tensorrt import build, calibrator
from mlperf_harness.errors import HarnessError

BACKEND = "tensorrt"
DEFAULT_WORKSPACE_MIB = 4096  # TensorRT's scratch memory for building and running, at most


def tensorrt_engine_options(
    precision: str, batch_size: int, workspace_mib: int, version: str
) -> tuple[tuple[str, str], ...]:
    """The builder settings an engine's key records, sorted by name (as EngineSpec keeps them)."""
    flags = build.precision_flags(precision)
    options = {
        "builder_flags": "+".join(flags) if flags else "-TF32",
        "profile": f"min=1,opt={batch_size},max={batch_size}",
        "tensorrt": version,
        "workspace_mib": str(workspace_mib),
    }
    if precision == "int8":
        options["calibrator"] = (
            f"{calibrator.CALIBRATION_METHOD}-batch{calibrator.CALIBRATION_BATCH}"
        )
    return tuple(sorted(options.items()))


def tensorrt_engine_spec(
    benchmark: str,
    model_sha256: str,
    precision: str,
    batch_size: int,
    calibration: CalibrationSet | None,
    *,
    workspace_mib: int = DEFAULT_WORKSPACE_MIB,
    tensorrt_version: str | None = None,
    device: str | None = None,
) -> EngineSpec:
    """The spec of a TensorRT engine serving batches of 1 to `batch_size`.

    `tensorrt_version` and `device` default to the installed TensorRT and the current GPU (found
    through cuda-python, else NVML); name them to compute the key of an engine for another host.
    """
    build.precision_flags(precision)  # refuses an unknown precision
    if batch_size < 1:
        raise HarnessError(f"a TensorRT engine's batch size must be at least 1, got {batch_size}")
    if workspace_mib < 1:
        raise HarnessError(f"the TensorRT workspace must be at least 1 MiB, got {workspace_mib}")
    if precision == "int8" and calibration is None:
        raise HarnessError("an int8 engine needs a calibration set")
    version = tensorrt_version if tensorrt_version is not None else libraries.tensorrt_version()
    int8 = precision == "int8"
    return EngineSpec(
        benchmark=benchmark,
        backend=BACKEND,
        precision=precision,
        batch_size=batch_size,
        model_sha256=model_sha256,
        device=device if device is not None else gpu_device_label(),
        # The calibration's own hash covers its images and their transform.
        builder_sha256=source_sha256(build, calibrator, calibration_module),
        calibration_sha256=calibration.sha256 if int8 and calibration is not None else None,
        options=tensorrt_engine_options(precision, batch_size, workspace_mib, version),
    )


def calibration_cache_file(cache_root: Path, spec: EngineSpec) -> Path | None:
    """Where an int8 engine's calibration cache lives (None for other precisions).

    Keyed by the model, the calibration images and method, and TensorRT's version only: engines of
    other batch sizes, builder flags or workspace share it, and are not calibrated again.
    """
    if spec.precision != "int8":
        return None
    if spec.calibration_sha256 is None:
        raise HarnessError(f"int8 engine spec {spec.name} names no calibration set")
    key = calibrator.calibration_cache_key(
        spec.model_sha256, spec.calibration_sha256, dict(spec.options)["tensorrt"]
    )
    return calibrator.calibration_cache_path(cache_root, spec.benchmark, key)


def tensorrt_engine(
    cache: EngineCache, spec: EngineSpec, model_path: Path, calibration: CalibrationSet | None
) -> tuple[Path, bool]:
    """(engine file, whether it was built now). A cached engine needs no TensorRT to be found."""
    if spec.backend != BACKEND:
        raise HarnessError(f"not a TensorRT engine spec: backend {spec.backend!r}")
    options = dict(spec.options)

    def builder(out_dir: Path) -> str:
        # The spec may name another host's TensorRT or GPU: build only where it applies.
        installed, here = libraries.tensorrt_version(), gpu_device_label()
        if installed != options["tensorrt"] or here != spec.device:
            raise HarnessError(
                f"this engine is for TensorRT {options['tensorrt']} on {spec.device}, but this host "
                f"has TensorRT {installed} on {here}"
            )
        return build.build_engine(
            model_path,
            out_dir,
            precision=spec.precision,
            batch_size=spec.batch_size,
            workspace_mib=int(options["workspace_mib"]),
            timing_cache=build.timing_cache_path(cache.root, installed, spec.device),
            calibration=calibration,
            calibration_cache=calibration_cache_file(cache.root, spec),
        )

    return cache.get_or_build(spec, builder)
