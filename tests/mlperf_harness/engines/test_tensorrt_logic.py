"""The TensorRT path's logic that needs neither TensorRT nor cuda-python: engine keys, builder
settings, calibration batching and cache keys, cuda-python result checking, runner helpers, and the
clear errors where the libraries are missing (real here: this machine has neither)."""

from __future__ import annotations

import ctypes
import enum
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.backends.tensorrt import libraries
from mlperf_harness.backends.tensorrt.cuda import CudaError, cuda_call, device_label, host_array
from mlperf_harness.backends.tensorrt.runner import TensorRTRunner, batch_chunks, choose_output
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import CalibrationSet, calibration_from_names
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.engines.tensorrt import build, calibrator
from mlperf_harness.engines.tensorrt.engine import (
    DEFAULT_WORKSPACE_MIB,
    calibration_cache_file,
    tensorrt_engine,
    tensorrt_engine_spec,
)
from mlperf_harness.errors import HarnessError

H100 = "NVIDIA H100 80GB HBM3 sm_90"
MODEL = "a" * 64
TENSORRT_ABSENT = importlib.util.find_spec("tensorrt") is None
CUDA_PYTHON_ABSENT = importlib.util.find_spec("cuda") is None
needs_no_tensorrt = pytest.mark.skipif(not TENSORRT_ABSENT, reason="TensorRT is installed here")


def _calibration(
    tmp_path: Path, name: str = "calibration", content: bytes = b"1"
) -> CalibrationSet:
    image_dir = tmp_path / name
    image_dir.mkdir(exist_ok=True)
    for file_name in ("a.JPEG", "b.JPEG"):
        (image_dir / file_name).write_bytes(content + file_name.encode())
    return calibration_from_names(image_dir, ["a.JPEG", "b.JPEG"], name)


def _spec(
    precision: str = "fp16",
    batch_size: int = 64,
    calibration: CalibrationSet | None = None,
    *,
    model: str = MODEL,
    workspace_mib: int = DEFAULT_WORKSPACE_MIB,
    version: str = "10.3.0",
    device: str = H100,
) -> EngineSpec:
    return tensorrt_engine_spec(
        "resnet50",
        model,
        precision,
        batch_size,
        calibration,
        workspace_mib=workspace_mib,
        tensorrt_version=version,
        device=device,
    )


# --- engine spec and key -------------------------------------------------------------------------


def test_same_inputs_give_the_same_key(tmp_path: Path) -> None:
    calibration = _calibration(tmp_path)
    assert _spec().key == _spec().key
    assert _spec("int8", 64, calibration).key == _spec("int8", 64, _calibration(tmp_path)).key


def test_every_input_changes_the_key(tmp_path: Path) -> None:
    calibration = _calibration(tmp_path)
    specs = {
        "base": _spec("int8", 64, calibration),
        "precision": _spec("fp16", 64),
        "fp32": _spec("fp32", 64),
        "batch size": _spec("int8", 128, calibration),
        "model": _spec("int8", 64, calibration, model="b" * 64),
        "workspace": _spec("int8", 64, calibration, workspace_mib=1024),
        "tensorrt": _spec("int8", 64, calibration, version="10.4.0"),
        "gpu": _spec("int8", 64, calibration, device="NVIDIA H200 sm_90"),
        "compute capability": _spec("int8", 64, calibration, device="NVIDIA H100 80GB HBM3 sm_89"),
        "calibration images": _spec("int8", 64, _calibration(tmp_path, "other", b"2")),
    }
    keys = {name: spec.key for name, spec in specs.items()}
    assert len(set(keys.values())) == len(keys), keys


def test_spec_records_the_builder_settings(tmp_path: Path) -> None:
    spec = _spec("int8", 32, _calibration(tmp_path))
    assert (spec.backend, spec.precision, spec.batch_size, spec.device) == (
        "tensorrt",
        "int8",
        32,
        H100,
    )
    assert dict(spec.options) == {
        "builder_flags": "INT8+FP16",
        "calibrator": f"entropy2-batch{calibrator.CALIBRATION_BATCH}",
        "profile": "min=1,opt=32,max=32",
        "tensorrt": "10.3.0",
        "workspace_mib": str(DEFAULT_WORKSPACE_MIB),
    }
    assert [name for name, _ in spec.options] == sorted(name for name, _ in spec.options)
    assert EngineSpec.from_json(spec.to_json()) == spec  # what engine.json holds reads back
    assert dict(_spec("fp16").options)["builder_flags"] == "FP16"
    assert dict(_spec("fp32").options)["builder_flags"] == "-TF32"
    assert "calibrator" not in dict(_spec("fp16").options)
    assert _spec("fp16").calibration_sha256 is None


@pytest.mark.parametrize(
    ("precision", "batch_size", "workspace_mib", "with_calibration", "message"),
    [
        ("bf16", 8, 1024, False, "not 'bf16'"),
        ("int8", 8, 1024, False, "calibration set"),
        ("fp16", 0, 1024, False, "at least 1"),
        ("fp16", 8, 0, False, "workspace"),
    ],
)
def test_spec_refuses_bad_settings(
    tmp_path: Path,
    precision: str,
    batch_size: int,
    workspace_mib: int,
    with_calibration: bool,
    message: str,
) -> None:
    calibration = _calibration(tmp_path) if with_calibration else None
    with pytest.raises(HarnessError, match=message):
        _spec(precision, batch_size, calibration, workspace_mib=workspace_mib)


def test_a_cached_engine_is_found_without_tensorrt(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path / "engines")
    spec = _spec("fp16", 8)

    def pretend_build(out_dir: Path) -> str:  # as if built earlier, on a host with TensorRT
        (out_dir / build.ENGINE_FILE).write_bytes(b"plan")
        return build.ENGINE_FILE

    built, _ = cache.get_or_build(spec, pretend_build)
    path, was_built = tensorrt_engine(cache, spec, tmp_path / "model.onnx", None)
    assert (path, was_built) == (built, False)
    assert path.parent.name == spec.name


# --- builder settings ----------------------------------------------------------------------------


def test_precision_flags_are_nvidias() -> None:
    assert build.precision_flags("fp32") == ()
    assert build.precision_flags("fp16") == ("FP16",)
    assert build.precision_flags("int8") == ("INT8", "FP16")  # int8 with fp16 fallback
    with pytest.raises(HarnessError, match="not 'fp8'"):
        build.precision_flags("fp8")


def test_profile_runs_batch_one_to_the_engine_batch() -> None:
    minimum, optimum, maximum = build.profile_shapes((-1, 3, 224, 224), 256)
    assert (minimum, optimum, maximum) == ((1, 3, 224, 224), (256, 3, 224, 224), (256, 3, 224, 224))


@pytest.mark.parametrize(
    ("shape", "batch_size", "message"),
    [
        ((8, 3, 224, 224), 8, "no dynamic batch"),
        ((-1, 3, -1, -1), 8, "dynamic beyond the batch"),
        ((-1, 3, 224, 224), 0, "at least 1"),
        ((), 8, "no dynamic batch"),
    ],
)
def test_profile_refuses_what_it_cannot_serve(
    shape: tuple[int, ...], batch_size: int, message: str
) -> None:
    with pytest.raises(HarnessError, match=message):
        build.profile_shapes(shape, batch_size)


def test_timing_cache_is_per_tensorrt_version_and_gpu(tmp_path: Path) -> None:
    path = build.timing_cache_path(tmp_path, "10.3.0", H100)
    assert path == tmp_path / "timing" / "tensorrt-10.3.0-NVIDIA-H100-80GB-HBM3-sm_90.cache"
    assert build.timing_cache_path(tmp_path, "10.4.0", H100) != path
    assert build.timing_cache_path(tmp_path, "10.3.0", "NVIDIA H200 sm_90") != path


# --- calibration batches and cache ---------------------------------------------------------------


def test_calibration_batches_are_full_and_the_last_is_padded_from_the_start() -> None:
    assert calibrator.padded_batch_indices(25, 10) == [
        list(range(10)),
        list(range(10, 20)),
        [20, 21, 22, 23, 24, 0, 1, 2, 3, 4],
    ]
    assert calibrator.padded_batch_indices(20, 10) == [list(range(10)), list(range(10, 20))]
    assert calibrator.padded_batch_indices(3, 7) == [[0, 1, 2, 0, 1, 2, 0]]  # smaller than a batch
    for count, size in ((0, 10), (5, 0)):
        with pytest.raises(HarnessError):
            calibrator.padded_batch_indices(count, size)


def test_fixed_size_batches_recut_images_in_order() -> None:
    images = np.arange(7 * 2 * 3, dtype=np.float32).reshape(7, 2, 3)
    uneven = [images[:4], images[4:]]  # as CalibrationSet.batches gives them: the last one short
    batches = calibrator.fixed_size_batches(uneven, 3)
    assert [batch.shape for batch in batches] == [(3, 2, 3)] * 3
    assert all(batch.dtype == np.float32 and batch.flags.c_contiguous for batch in batches)
    np.testing.assert_array_equal(np.concatenate(batches), images[[0, 1, 2, 3, 4, 5, 6, 0, 1]])


def test_calibration_cache_is_shared_by_batch_sizes_flags_and_workspace(tmp_path: Path) -> None:
    calibration = _calibration(tmp_path)
    root = tmp_path / "engines"
    path = calibration_cache_file(root, _spec("int8", 64, calibration))
    assert path is not None
    assert path.parent == root / "calibration" / "resnet50"
    assert path.name.startswith("tensorrt-") and path.suffix == ".cache"
    for other in (
        _spec("int8", 256, calibration),
        _spec("int8", 64, calibration, workspace_mib=512),
    ):
        assert other.key != _spec("int8", 64, calibration).key  # another engine ...
        assert calibration_cache_file(root, other) == path  # ... the same calibration


def test_calibration_cache_changes_with_what_decides_the_scales(tmp_path: Path) -> None:
    calibration = _calibration(tmp_path)
    root = tmp_path / "engines"
    path = calibration_cache_file(root, _spec("int8", 64, calibration))
    others = [
        _spec("int8", 64, calibration, model="b" * 64),
        _spec("int8", 64, _calibration(tmp_path, "other", b"2")),
        _spec("int8", 64, calibration, version="10.4.0"),
    ]
    paths = {calibration_cache_file(root, other) for other in others}
    assert path not in paths and len(paths) == len(others)
    assert calibration_cache_file(root, _spec("fp16", 64)) is None


# --- cuda-python results and runner helpers ------------------------------------------------------


class _Error(enum.IntEnum):  # how cuda-python's cudaError_t behaves: an IntEnum
    cudaSuccess = 0
    cudaErrorMemoryAllocation = 2


def test_cuda_call_returns_values_and_names_failures() -> None:
    assert cuda_call("cudaFree", (_Error.cudaSuccess,)) is None
    assert cuda_call("cudaMalloc", (_Error.cudaSuccess, 1234)) == 1234
    assert cuda_call("pair", (_Error.cudaSuccess, 1, 2)) == (1, 2)
    with pytest.raises(
        CudaError, match=r"CUDA cudaMalloc\(64\) failed: cudaErrorMemoryAllocation \(2\)"
    ):
        cuda_call("cudaMalloc(64)", (_Error.cudaErrorMemoryAllocation, 0))
    assert issubclass(CudaError, HarnessError)  # one line, exit code 2 at the CLI


def test_device_label_is_name_and_compute_capability() -> None:
    assert device_label(b"NVIDIA H100 80GB HBM3\0\0\0", 9, 0) == H100
    assert device_label(" NVIDIA H200 ", 9, 0) == "NVIDIA H200 sm_90"


def test_host_array_is_a_view_of_the_memory() -> None:
    memory = (ctypes.c_byte * 24)()
    view = host_array(ctypes.addressof(memory), np.float32, (2, 3))
    view[:] = np.arange(6, dtype=np.float32).reshape(2, 3)
    again = host_array(ctypes.addressof(memory), np.float32, (2, 3))
    np.testing.assert_array_equal(again, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_runner_splits_batches_larger_than_the_profile() -> None:
    assert batch_chunks(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert batch_chunks(4, 4) == [(0, 4)]
    assert batch_chunks(0, 4) == []


def test_runner_picks_the_named_output_or_the_first() -> None:
    outputs = ["ArgMax:0", "softmax_tensor:0"]
    assert choose_output(outputs, None, Path("e.plan")) == "ArgMax:0"
    assert choose_output(outputs, "softmax_tensor:0", Path("e.plan")) == "softmax_tensor:0"
    with pytest.raises(HarnessError, match=r"no output 'logits'.*ArgMax:0, softmax_tensor:0"):
        choose_output(outputs, "logits", Path("e.plan"))


def test_tensorrt_major_version() -> None:
    assert libraries.tensorrt_major("10.3.0.26") == 10
    assert libraries.tensorrt_major("8.6.1") == 8
    assert libraries.tensorrt_major("unknown") == 0


# --- where the libraries are missing (this machine) ----------------------------------------------


@needs_no_tensorrt
def test_missing_tensorrt_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"needs TensorRT 10 .* cannot be imported here"):
        libraries.import_tensorrt()
    with pytest.raises(HarnessError, match="needs TensorRT 10"):
        tensorrt_engine_spec("resnet50", MODEL, "fp16", 8, None, device=H100)
    with pytest.raises(HarnessError, match="needs TensorRT 10"):
        TensorRTRunner(tmp_path / "model.plan").activate()
    with pytest.raises(HarnessError, match="needs TensorRT 10"):
        build.build_engine(
            tmp_path / "model.onnx",
            tmp_path,
            precision="fp16",
            batch_size=8,
            workspace_mib=1024,
            timing_cache=tmp_path / "timing.cache",
        )
    # An engine not yet built needs TensorRT: the same error, and nothing left in the cache.
    cache = EngineCache(tmp_path / "engines")
    with pytest.raises(HarnessError, match="needs TensorRT 10"):
        tensorrt_engine(cache, _spec("fp16", 8), tmp_path / "model.onnx", None)
    # Only the key's lock file stays (mlperf_harness.scratch_lock): no half-built engine.
    left = (tmp_path / "engines" / "resnet50").iterdir()
    assert [path.name for path in left if not path.name.endswith(".lock")] == []


@pytest.mark.skipif(not CUDA_PYTHON_ABSENT, reason="cuda-python is installed here")
def test_missing_cuda_python_is_one_clear_error() -> None:
    with pytest.raises(HarnessError, match="needs cuda-python"):
        libraries.import_cudart()


def test_backend_modules_import_without_tensorrt_or_cuda() -> None:
    """A fresh interpreter: importing the TensorRT modules loads neither library."""
    code = (
        "import sys\n"
        "import mlperf_harness.backends.tensorrt.runner\n"
        "import mlperf_harness.engines.tensorrt.engine\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorrt', 'cuda'))\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
