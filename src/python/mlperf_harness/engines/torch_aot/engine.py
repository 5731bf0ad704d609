"""The torch engine for a model, precision and batch size: found in the cache by its key, else built.

Same shape as the ONNX Runtime engine: `torch_engine_spec` names exactly what the engine is built
from (model bytes, precision, batch size, layout, compiler settings, torch version, GPU and the
builder's own code), `torch_engine` returns the cached package or builds it.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import Calibration
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.engines.torch_aot import build, torch_host
from mlperf_harness.engines.torch_fp8 import build as fp8_build
from mlperf_harness.engines.torch_fp8 import calibrate as fp8_calibrate
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

BACKEND = "torch"
COMPILER = "aot_inductor"
DEFAULT_PRECISION = "fp16"
# The builder's code, read without importing it (torch_module imports torch).
BUILDER_MODULES = (
    "mlperf_harness.engines.torch_aot.build",
    "mlperf_harness.engines.torch_aot.metadata",
    "mlperf_harness.engines.torch_aot.onnx_to_torch",
    "mlperf_harness.engines.torch_aot.torch_module",
)
# The FP8 engine's too: its kernel source and the tilings its tuning tries are part of its key.
FP8_BUILDER_MODULES = (
    *BUILDER_MODULES,
    "mlperf_harness.engines.torch_aot.conv_epilogue",
    "mlperf_harness.engines.torch_aot.conv_epilogue_op",
    "mlperf_harness.engines.torch_fp8.build",
    "mlperf_harness.engines.torch_fp8.calibrate",
    "mlperf_harness.engines.torch_fp8.conv_kernel",
    "mlperf_harness.engines.torch_fp8.epilogue",
    "mlperf_harness.engines.torch_fp8.exported",
    "mlperf_harness.engines.torch_fp8.input_kernel",
    "mlperf_harness.engines.torch_fp8.module",
    "mlperf_harness.engines.torch_fp8.ops",
    "mlperf_harness.engines.torch_fp8.plan",
    "mlperf_harness.engines.torch_fp8.pointwise_kernel",
    "mlperf_harness.engines.torch_fp8.pool_kernel",
    "mlperf_harness.engines.torch_fp8.scales",
    "mlperf_harness.engines.torch_fp8.spatial_kernel",
    "mlperf_harness.engines.torch_fp8.stem_pool_kernel",
    "mlperf_harness.engines.torch_fp8.tile_order",
    "mlperf_harness.engines.torch_fp8.tuning",
)
PRECISIONS = (*build.PRECISIONS, fp8_build.PRECISION)
SERVER_LADDER_EIGHTHS = (8, 6, 4, 3, 2, 1)
# Under the cache's root: the Triton cache the FP8 builds share for the tilings tuning compiles
# (fp8 build.py says why; Triton's own keys keep GPUs and versions apart).
FP8_TUNING_KERNELS = "fp8_tuning_kernels"


def builder_sha256(modules: tuple[str, ...] = BUILDER_MODULES) -> str:
    """Like spec.source_sha256, for modules named rather than imported."""
    digest = hashlib.sha256()
    for name in modules:
        found = importlib.util.find_spec(name)
        loader = None if found is None else found.loader
        source = None
        if loader is not None and hasattr(loader, "get_source"):
            source = loader.get_source(name)
        if source is None:
            raise HarnessError(f"cannot read the source of {name}, which keys torch engines")
        digest.update(source.encode())
    return digest.hexdigest()


def torch_engine_spec(
    benchmark: str,
    model_sha256: str,
    precision: str,
    batch_size: int,
    *,
    channels_last: bool = True,
    max_autotune: bool = False,
    device: str | None = None,
    torch_version: str | None = None,
    calibration: Calibration | None = None,
    builder_modules: tuple[str, ...] | None = None,
) -> EngineSpec:
    """The spec of a torch engine; `device` and `torch_version` default to this host's (needs torch).
    fp8 engines are calibrated on `calibration`. `builder_modules`: the code that builds it, where a
    benchmark builds its own engine from this converter (RetinaNet's, with its postprocessing)."""
    if precision not in PRECISIONS:
        raise HarnessError(
            f"the torch backend builds {', '.join(PRECISIONS)} engines, not {precision!r}"
            + (" (int8 is the tensorrt backend's)" if precision == "int8" else "")
        )
    fp8 = precision == fp8_build.PRECISION
    if fp8 and calibration is None:
        raise HarnessError("an fp8 engine needs a calibration set")
    if batch_size < 1:
        raise HarnessError(f"a torch engine needs a batch size of at least 1, got {batch_size}")
    return EngineSpec(
        benchmark=benchmark,
        backend=BACKEND,
        precision=precision,
        batch_size=batch_size,
        model_sha256=model_sha256,
        device=device if device is not None else torch_host.gpu_device(),
        builder_sha256=builder_sha256(
            builder_modules or (FP8_BUILDER_MODULES if fp8 else BUILDER_MODULES)
        ),
        calibration_sha256=calibration.sha256 if fp8 and calibration is not None else None,
        options=tuple(
            sorted(
                {
                    "channels_last": str(channels_last).lower(),
                    "compiler": COMPILER,
                    "max_autotune": str(max_autotune).lower(),
                    "torch": torch_version
                    if torch_version is not None
                    else torch_host.torch_version(),
                }.items()
            )
        ),
    )


def check_spec_torch(spec: EngineSpec) -> None:
    """One line unless this host's torch is the one `spec` was made for (needs torch)."""
    wanted, here = dict(spec.options)["torch"], torch_host.torch_version()
    if wanted != here:
        raise HarnessError(f"this engine is for torch {wanted}, this host has {here}")


def engine_batch_sizes(backend: str, scenario: Scenario, batch_size: int) -> tuple[int, ...]:
    """The batch sizes to build torch engines for, largest first (the run's batch_size). Server
    batches come in every size up to the batcher's: a torch engine computes at one static batch,
    so the runner also gets engines of these fractions of it (in eighths) and pads a batch only up
    to the next one: never more than a quarter of the batch is padding above an eighth of it."""
    if backend != BACKEND or scenario is not Scenario.SERVER:
        return (batch_size,)
    sizes = {max(1, batch_size * eighths // 8) for eighths in SERVER_LADDER_EIGHTHS}
    return tuple(sorted(sizes, reverse=True))


def torch_engine(
    cache: EngineCache,
    spec: EngineSpec,
    model_path: Path,
    calibration: Calibration | None = None,
) -> tuple[Path, bool]:
    """(engine file, whether it was built now)."""
    if spec.backend != BACKEND:
        raise HarnessError(f"not a torch engine spec: backend {spec.backend!r}")
    options = dict(spec.options)

    def builder(out_dir: Path) -> str:
        check_spec_torch(spec)
        if spec.precision == fp8_build.PRECISION:
            assert calibration is not None  # checked by torch_engine_spec
            # The calibrated maxima outlive the engine: another batch size or kernel reuses them.
            key = fp8_calibrate.amax_key(spec.model_sha256, calibration)
            return fp8_build.build_fp8_package(
                model_path,
                out_dir,
                batch_size=spec.batch_size,
                device=spec.device,
                calibration=calibration,
                amax_cache=cache.root / "calibration" / spec.benchmark / f"{key}-fp8.json",
                tuning_kernels=cache.root / FP8_TUNING_KERNELS,
            )
        return build.build_package(
            model_path,
            out_dir,
            precision=spec.precision,
            batch_size=spec.batch_size,
            channels_last=options["channels_last"] == "true",
            max_autotune=options["max_autotune"] == "true",
            device=spec.device,
        )

    return cache.get_or_build(spec, builder)
