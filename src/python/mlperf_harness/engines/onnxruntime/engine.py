"""The ONNX Runtime engine for a model and precision: found in the cache by its key, else built.

One code path for both entry points: the harness calls it before a run, `generate_engines` ahead of
time (for a PEX on a host without Pants), and Pants engine targets run `generate_engines`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.engines import calibration as calibration_module
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import Calibration
from mlperf_harness.engines.onnxruntime import build
from mlperf_harness.engines.spec import EngineSpec, cpu_device, source_sha256
from mlperf_harness.errors import HarnessError

BACKEND = "onnxruntime"
DYNAMIC_BATCH = 0  # ONNX Runtime models keep a dynamic batch: one engine serves every batch size
INT8_OPTIONS = (("activations", "uint8"), ("format", "qdq"), ("weights", "int8-per-channel"))
OPERATORS_OPTION = "operators"  # int8 quantizing only these (comma-separated); absent: all
FP32_NODES_OPTION = "fp32_nodes"  # int8 leaving these nodes (comma-separated names) in fp32


def onnxruntime_engine_spec(
    benchmark: str,
    model_sha256: str,
    precision: str,
    calibration: Calibration | None,
    op_types: Sequence[str] | None = None,
    fp32_nodes: Sequence[str] = (),
) -> EngineSpec:
    """`op_types`: int8's quantized operators (None: every one the quantizer knows); `fp32_nodes`:
    nodes (by name) int8 leaves in fp32 though of a quantized operator. Both are in the key."""
    if precision not in ("fp32", "int8"):
        raise HarnessError(
            f"onnxruntime on the CPU builds fp32 and int8 engines, not {precision!r}"
        )
    if precision == "int8" and calibration is None:
        raise HarnessError("an int8 engine needs a calibration set")
    int8 = precision == "int8"
    options = INT8_OPTIONS if int8 else ()
    if int8 and op_types is not None:
        options = tuple(sorted((*options, (OPERATORS_OPTION, ",".join(sorted(op_types))))))
    if int8 and fp32_nodes:
        unlisted = [name for name in fp32_nodes if not name or "," in name]
        if unlisted:
            raise HarnessError(
                f"int8 cannot leave node {unlisted[0]!r} in fp32: name it without commas"
            )
        options = tuple(sorted((*options, (FP32_NODES_OPTION, ",".join(sorted(fp32_nodes))))))
    return EngineSpec(
        benchmark=benchmark,
        backend=BACKEND,
        precision=precision,
        batch_size=DYNAMIC_BATCH,
        model_sha256=model_sha256,
        device=cpu_device(),
        # The calibration's own hash covers its images and their transform.
        builder_sha256=source_sha256(build, calibration_module),
        calibration_sha256=calibration.sha256 if int8 and calibration is not None else None,
        options=options,
    )


def onnxruntime_engine(
    cache: EngineCache,
    spec: EngineSpec,
    model_path: Path,
    calibration: Calibration | None,
) -> tuple[Path, bool]:
    """(engine file, whether it was built now)."""
    operators = dict(spec.options).get(OPERATORS_OPTION)
    op_types = None if operators is None else operators.split(",")
    fp32_names = dict(spec.options).get(FP32_NODES_OPTION)
    fp32_nodes = () if fp32_names is None else tuple(fp32_names.split(","))

    def builder(out_dir: Path) -> str:
        if spec.precision == "fp32":
            return build.build_fp32(model_path, out_dir)
        assert calibration is not None  # checked by onnxruntime_engine_spec
        key = build.calibration_key(spec.model_sha256, calibration, op_types)
        ranges = cache.root / "calibration" / spec.benchmark / f"{key}.json"
        return build.build_int8(model_path, out_dir, calibration, ranges, op_types, fp32_nodes)

    return cache.get_or_build(spec, builder)
