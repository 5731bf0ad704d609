"""The TensorRT builder, calibrator and runner driven by a FAKE `tensorrt` module.

TensorRT cannot be installed in this workplace, so these tests put a stand-in `tensorrt` (written here,
following the TensorRT 10 Python API documentation) in sys.modules, and a stand-in cuda-python
runtime whose "device" memory is host memory (ctypes buffers).

What this proves: our code makes the calls it means to, in order, with the arguments it means to
(network flags, workspace bytes, builder flags, profile and calibration-profile shapes, timing-cache
read and write), feeds the calibrator's batches to the addresses it returns, reuses the calibration
cache, stages data through the buffers it allocates, chunks large batches, serialises threads, frees
every allocation, and turns every failure into a clear HarnessError.

What it does NOT prove: that real TensorRT accepts these calls, parses our ONNX models, builds an
engine, calibrates well, or computes anything. The fake only mirrors our reading of the docs. Where a
GPU and cuda-python exist (not in CI), one test runs the runner on real CUDA memory and streams, with
a fake engine whose "inference" is a device-to-device copy; TensorRT itself is never exercised.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import json
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.backends.tensorrt.cuda import host_array
from mlperf_harness.backends.tensorrt.runner import TensorRTRunner
from mlperf_harness.datasets.imagenet.layout import parse_val_map
from mlperf_harness.datasets.imagenet.synthetic import generate_image_set
from mlperf_harness.engines.cache import EngineCache, read_engine_spec
from mlperf_harness.engines.calibration import CalibrationSet, calibration_from_names
from mlperf_harness.engines.tensorrt import build, calibrator
from mlperf_harness.engines.tensorrt.engine import (
    DEFAULT_WORKSPACE_MIB,
    calibration_cache_file,
    tensorrt_engine,
    tensorrt_engine_spec,
)
from mlperf_harness.errors import HarnessError

FAKE_VERSION = "10.3.0"
FAKE_DEVICE = "Fake GPU sm_90"
IMAGE_SHAPE = (3, 224, 224)  # what the calibration set's preprocessing makes


# --- a fake cuda-python runtime: "device" memory is ctypes memory ---------------------------------


class _Error(enum.IntEnum):
    cudaSuccess = 0
    cudaErrorInvalidValue = 1
    cudaErrorMemoryAllocation = 2


class _Kind(enum.IntEnum):
    cudaMemcpyHostToDevice = 1
    cudaMemcpyDeviceToHost = 2


class _Stream:
    _numbers = itertools.count(0x5000)

    def __init__(self) -> None:
        self.handle = next(self._numbers)

    def __int__(self) -> int:
        return self.handle


class FakeCudart:
    cudaError_t = _Error
    cudaMemcpyKind = _Kind

    def __init__(self) -> None:
        self.device: dict[int, Any] = {}  # address -> the ctypes buffer that backs it
        self.host: dict[int, Any] = {}
        self.streams: set[_Stream] = set()
        self.fail_malloc_after: int | None = None  # fail the n-th cudaMalloc (0-based)
        self.mallocs = 0

    def _alloc(self, table: dict[int, Any], nbytes: int) -> tuple[_Error, int]:
        buffer = (ctypes.c_byte * nbytes)()
        table[ctypes.addressof(buffer)] = buffer
        return _Error.cudaSuccess, ctypes.addressof(buffer)

    def cudaMalloc(self, nbytes: int) -> tuple[_Error, int]:
        self.mallocs += 1
        if self.fail_malloc_after is not None and self.mallocs > self.fail_malloc_after:
            return _Error.cudaErrorMemoryAllocation, 0
        return self._alloc(self.device, nbytes)

    def cudaMallocHost(self, nbytes: int) -> tuple[_Error, int]:
        return self._alloc(self.host, nbytes)

    def cudaFree(self, pointer: int) -> tuple[_Error]:
        return (
            (_Error.cudaSuccess,)
            if self.device.pop(pointer, None) is not None
            else (_Error.cudaErrorInvalidValue,)
        )

    def cudaFreeHost(self, pointer: int) -> tuple[_Error]:
        return (
            (_Error.cudaSuccess,)
            if self.host.pop(pointer, None) is not None
            else (_Error.cudaErrorInvalidValue,)
        )

    def _within(self, table: dict[int, Any], address: int, nbytes: int) -> bool:
        return any(
            start <= address and address + nbytes <= start + ctypes.sizeof(buffer)
            for start, buffer in table.items()
        )

    def cudaMemcpy(self, dst: int, src: int, nbytes: int, kind: _Kind) -> tuple[_Error]:
        device = dst if kind == _Kind.cudaMemcpyHostToDevice else src
        if not self._within(self.device, device, nbytes):
            return (_Error.cudaErrorInvalidValue,)
        ctypes.memmove(dst, src, nbytes)
        return (_Error.cudaSuccess,)

    def cudaMemcpyAsync(
        self, dst: int, src: int, nbytes: int, kind: _Kind, stream: _Stream
    ) -> tuple[_Error]:
        if stream not in self.streams:
            return (_Error.cudaErrorInvalidValue,)
        host = src if kind == _Kind.cudaMemcpyHostToDevice else dst
        if not self._within(self.host, host, nbytes):  # async copies must use pinned memory
            return (_Error.cudaErrorInvalidValue,)
        return self.cudaMemcpy(dst, src, nbytes, kind)

    def cudaStreamCreate(self) -> tuple[_Error, _Stream]:
        stream = _Stream()
        self.streams.add(stream)
        return _Error.cudaSuccess, stream

    def cudaStreamSynchronize(self, stream: _Stream) -> tuple[_Error]:
        return (_Error.cudaSuccess if stream in self.streams else _Error.cudaErrorInvalidValue,)

    def cudaStreamDestroy(self, stream: _Stream) -> tuple[_Error]:
        self.streams.discard(stream)
        return (_Error.cudaSuccess,)

    def cudaGetDevice(self) -> tuple[_Error, int]:
        return _Error.cudaSuccess, 0

    def cudaGetDeviceProperties(self, device: int) -> tuple[_Error, Any]:
        return _Error.cudaSuccess, SimpleNamespace(name=b"Fake GPU\0\0\0", major=9, minor=0)

    def live(self) -> int:
        return len(self.device) + len(self.host) + len(self.streams)


# --- a fake tensorrt: the builder side ------------------------------------------------------------


class BuilderFlag(enum.Enum):
    FP16 = "FP16"
    INT8 = "INT8"
    TF32 = "TF32"


class MemoryPoolType(enum.Enum):
    WORKSPACE = "WORKSPACE"


class TensorIOMode(enum.Enum):
    INPUT = "INPUT"
    OUTPUT = "OUTPUT"


class Logger:
    WARNING = "WARNING"

    def __init__(self, severity: str) -> None:
        self.severity = severity


class IInt8EntropyCalibrator2:
    def __init__(self) -> None:
        self.base_initialised = True


@dataclass
class Profile:
    shapes: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)

    def set_shape(
        self, name: str, minimum: Sequence[int], optimum: Sequence[int], maximum: Sequence[int]
    ) -> None:
        self.shapes[name] = (tuple(minimum), tuple(optimum), tuple(maximum))


@dataclass
class TimingCache:
    data: bytes

    def serialize(self) -> bytes:
        return self.data


class Config:
    def __init__(self) -> None:
        self.flags = {BuilderFlag.TF32}  # TensorRT's default
        self.pools: dict[MemoryPoolType, int] = {}
        self.profiles: list[Profile] = []
        self.int8_calibrator: Any = None
        self.calibration_profile: Profile | None = None
        self.timing_cache: TimingCache | None = None
        self.timing_caches_created: list[bytes] = []

    def set_memory_pool_limit(self, pool: MemoryPoolType, size: int) -> None:
        self.pools[pool] = size

    def set_flag(self, flag: BuilderFlag) -> None:
        self.flags.add(flag)

    def clear_flag(self, flag: BuilderFlag) -> None:
        self.flags.discard(flag)

    def add_optimization_profile(self, profile: Profile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1

    def set_calibration_profile(self, profile: Profile) -> bool:
        self.calibration_profile = profile
        return True

    def create_timing_cache(self, data: bytes) -> TimingCache:
        self.timing_caches_created.append(bytes(data))
        return TimingCache(bytes(data))

    def set_timing_cache(self, cache: TimingCache, ignore_mismatch: bool) -> bool:
        if cache.data.startswith(b"other-gpu") and not ignore_mismatch:
            return False  # as TensorRT refuses a cache made on another device
        self.timing_cache = cache
        return True

    def get_timing_cache(self) -> TimingCache | None:
        return self.timing_cache


@dataclass
class Network:
    inputs: list[SimpleNamespace] = field(default_factory=list)

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    def get_input(self, index: int) -> SimpleNamespace:
        return self.inputs[index]


class OnnxParser:
    """Reads our fake "ONNX" files: JSON naming the inputs, or the errors parsing should report."""

    def __init__(self, network: Network, logger: Logger) -> None:
        self.network = network
        self.errors: list[str] = []

    def parse_from_file(self, path: str) -> bool:
        model = json.loads(Path(path).read_text())
        self.errors = model.get("errors", [])
        for name, shape in model.get("inputs", []):
            self.network.inputs.append(SimpleNamespace(name=name, shape=tuple(shape)))
        return not self.errors

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    def get_error(self, index: int) -> str:
        return self.errors[index]


class Builder:
    fail = False  # build_serialized_network returns None, as TensorRT does when a build fails

    def __init__(self, logger: Logger) -> None:
        self.logger = logger
        self.network_flags: list[int] = []
        FakeTensorRT.builders.append(self)
        self.config: Config | None = None
        self.fed: list[npt.NDArray[np.float32]] = []
        self.cache_read: bytes | None = None

    def create_network(self, flags: int) -> Network:
        self.network_flags.append(flags)
        return Network()

    def create_builder_config(self) -> Config:
        self.config = Config()
        return self.config

    def create_optimization_profile(self) -> Profile:
        return Profile()

    def build_serialized_network(self, network: Network, config: Config) -> bytes | None:
        calibrator_ = config.int8_calibrator
        if calibrator_ is not None:
            # TensorRT's protocol: a cache with scales ends calibration before it starts.
            self.cache_read = calibrator_.read_calibration_cache()
            if self.cache_read is None:
                assert config.calibration_profile is not None
                name = network.get_input(0).name
                shape = config.calibration_profile.shapes[name][1]  # the calibration OPT shape
                while (pointers := calibrator_.get_batch([name])) is not None:
                    self.fed.append(host_array(pointers[0], np.float32, shape).copy())
                calibrator_.write_calibration_cache(memoryview(f"scales:{len(self.fed)}".encode()))
        assert config.timing_cache is not None
        config.timing_cache.data += b"+timed"
        if self.fail:
            return None
        return json.dumps({"plan": sorted(flag.value for flag in config.flags)}).encode()


# --- a fake tensorrt: the runtime side ------------------------------------------------------------


_NUMPY_TYPES: dict[str, type[np.generic]] = {"float32": np.float32, "int64": np.int64}


def nptype(dtype: str) -> type[np.generic]:
    return _NUMPY_TYPES[dtype]


class Engine:
    """A fake engine described by JSON: its tensors, its profile's largest batch and what it does
    ("argmax": on host-backed fake memory; "device-copy": copies input to output on a real GPU)."""

    def __init__(self, description: dict[str, Any]) -> None:
        self.tensors: list[dict[str, Any]] = description["tensors"]
        self.max_batch: int = description["max_batch"]
        self.op: str = description["op"]

    def _tensor(self, name: str) -> dict[str, Any]:
        return next(tensor for tensor in self.tensors if tensor["name"] == name)

    @property
    def num_io_tensors(self) -> int:
        return len(self.tensors)

    def get_tensor_name(self, index: int) -> str:
        return str(self.tensors[index]["name"])

    def get_tensor_mode(self, name: str) -> TensorIOMode:
        return TensorIOMode.INPUT if self._tensor(name)["mode"] == "input" else TensorIOMode.OUTPUT

    def get_tensor_dtype(self, name: str) -> str:
        return str(self._tensor(name)["dtype"])

    def get_tensor_profile_shape(self, name: str, profile: int) -> list[tuple[int, ...]]:
        rest = tuple(self._tensor(name)["shape"][1:])
        return [(1, *rest), (self.max_batch, *rest), (self.max_batch, *rest)]

    def create_execution_context(self) -> Context:
        return Context(self)


class Context:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.batch = 0
        self.addresses: dict[str, int] = {}
        self.input_shapes: list[tuple[int, ...]] = []

    def set_input_shape(self, name: str, shape: Sequence[int]) -> bool:
        rest = tuple(self.engine._tensor(name)["shape"][1:])
        if not 1 <= shape[0] <= self.engine.max_batch or tuple(shape[1:]) != rest:
            return False
        self.batch = shape[0]
        self.input_shapes.append(tuple(shape))
        return True

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        return (self.batch, *self.engine._tensor(name)["shape"][1:])

    def set_tensor_address(self, name: str, address: int) -> bool:
        self.addresses[name] = address
        return True

    def _array(self, name: str) -> npt.NDArray[Any]:
        dtype = nptype(self.engine.get_tensor_dtype(name))
        return host_array(self.addresses[name], dtype, self.get_tensor_shape(name))

    def execute_async_v3(self, stream_handle: int) -> bool:
        assert isinstance(stream_handle, int)
        inputs = [t["name"] for t in self.engine.tensors if t["mode"] == "input"]
        if self.engine.op == "argmax":
            samples = self._array(inputs[0]).reshape(self.batch, -1)
            self._array("ArgMax:0")[:] = samples.argmax(axis=1)
            self._array("scores")[:] = samples[:, :2] * 2
            return True
        from mlperf_harness.backends.tensorrt.libraries import import_cudart

        cudart = import_cudart()  # the real one: a device-to-device copy on the runner's stream
        nbytes = self.batch * int(np.prod(self.engine._tensor(inputs[0])["shape"][1:])) * 4
        kind = cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice
        error = cudart.cudaMemcpyAsync(
            self.addresses["copy"], self.addresses[inputs[0]], nbytes, kind, stream_handle
        )[0]
        return int(getattr(error, "value", error)) == 0


class Runtime:
    def __init__(self, logger: Logger) -> None:
        self.logger = logger

    def deserialize_cuda_engine(self, data: bytes) -> Engine | None:
        try:
            return Engine(json.loads(data))
        except ValueError:
            return None  # as TensorRT does for a plan it cannot read


class FakeTensorRT:
    """Stands in for the `tensorrt` module (an object in sys.modules serves `import_module`)."""

    builders: ClassVar[list[Builder]] = []

    __version__ = FAKE_VERSION
    Logger = Logger
    Builder = Builder
    OnnxParser = OnnxParser
    Runtime = Runtime
    BuilderFlag = BuilderFlag
    MemoryPoolType = MemoryPoolType
    TensorIOMode = TensorIOMode
    IInt8EntropyCalibrator2 = IInt8EntropyCalibrator2

    @staticmethod
    def nptype(dtype: str) -> type[np.generic]:
        return nptype(dtype)


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def fake_trt(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeTensorRT]]:
    FakeTensorRT.builders = []
    Builder.fail = False
    monkeypatch.setitem(sys.modules, "tensorrt", FakeTensorRT)
    yield FakeTensorRT


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> FakeCudart:
    cudart = FakeCudart()
    monkeypatch.setitem(sys.modules, "cuda.bindings.runtime", cudart)
    return cudart


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> CalibrationSet:
    """13 generated JPEGs: batches of 10 make one full batch and one padded."""
    image_dir = tmp_path_factory.mktemp("calibration")
    val_map = generate_image_set(image_dir, 13, seed=0, progress=False)
    names = [name for name, _ in parse_val_map(val_map)]
    return calibration_from_names(image_dir, names, "13 generated images")


def _model(tmp_path: Path, shape: Sequence[int] = (-1, *IMAGE_SHAPE), **extra: Any) -> Path:
    path = tmp_path / "model.onnx"
    path.write_text(json.dumps({"inputs": [["input_tensor:0", list(shape)]], **extra}))
    return path


def _last_builder() -> Builder:
    return FakeTensorRT.builders[-1]


# --- builder --------------------------------------------------------------------------------------


def test_fp16_engine_is_built_cached_and_recorded(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    cache = EngineCache(tmp_path / "engines")
    spec = tensorrt_engine_spec("resnet50", "a" * 64, "fp16", 64, None)
    assert (spec.device, dict(spec.options)["tensorrt"]) == (FAKE_DEVICE, FAKE_VERSION)

    path, built = tensorrt_engine(cache, spec, _model(tmp_path), None)
    assert built and path.name == build.ENGINE_FILE
    assert json.loads(path.read_bytes()) == {"plan": ["FP16", "TF32"]}
    assert read_engine_spec(path.parent) == (spec, build.ENGINE_FILE)  # engine.json beside it

    builder = _last_builder()
    config = builder.config
    assert config is not None
    assert builder.network_flags == [0]
    assert config.pools == {MemoryPoolType.WORKSPACE: DEFAULT_WORKSPACE_MIB << 20}
    assert config.flags == {BuilderFlag.FP16, BuilderFlag.TF32}
    assert [p.shapes for p in config.profiles] == [
        {"input_tensor:0": ((1, *IMAGE_SHAPE), (64, *IMAGE_SHAPE), (64, *IMAGE_SHAPE))}
    ]
    assert config.int8_calibrator is None and config.calibration_profile is None

    assert tensorrt_engine(cache, spec, _model(tmp_path), None) == (path, False)
    assert len(FakeTensorRT.builders) == 1  # found by its key: not built again


def test_fp32_clears_tf32(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    spec = tensorrt_engine_spec("resnet50", "a" * 64, "fp32", 8, None)
    tensorrt_engine(EngineCache(tmp_path), spec, _model(tmp_path), None)
    config = _last_builder().config
    assert config is not None and config.flags == set()


def test_timing_cache_is_read_before_and_written_after(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    cache = EngineCache(tmp_path / "engines")
    timing = build.timing_cache_path(cache.root, FAKE_VERSION, FAKE_DEVICE)
    for batch_size, read in ((8, b""), (16, b"+timed")):
        spec = tensorrt_engine_spec("resnet50", "a" * 64, "fp16", batch_size, None)
        tensorrt_engine(cache, spec, _model(tmp_path), None)
        config = _last_builder().config
        assert config is not None and config.timing_caches_created == [read]
    assert timing.read_bytes() == b"+timed+timed"


def test_unusable_timing_cache_is_replaced(
    fake_trt: type[FakeTensorRT],
    fake_cuda: FakeCudart,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache = EngineCache(tmp_path / "engines")
    timing = build.timing_cache_path(cache.root, FAKE_VERSION, FAKE_DEVICE)
    timing.parent.mkdir(parents=True)
    timing.write_bytes(b"other-gpu")
    spec = tensorrt_engine_spec("resnet50", "a" * 64, "fp16", 8, None)
    tensorrt_engine(cache, spec, _model(tmp_path), None)
    config = _last_builder().config
    assert config is not None and config.timing_caches_created == [b"other-gpu", b""]
    assert "ignoring unusable timing cache" in capsys.readouterr().err
    assert timing.read_bytes() == b"+timed"


def test_int8_calibrates_once_and_engines_of_other_batch_sizes_reuse_it(
    fake_trt: type[FakeTensorRT],
    fake_cuda: FakeCudart,
    tmp_path: Path,
    calibration: CalibrationSet,
) -> None:
    cache = EngineCache(tmp_path / "engines")
    spec = tensorrt_engine_spec("resnet50", "a" * 64, "int8", 64, calibration)
    path, built = tensorrt_engine(cache, spec, _model(tmp_path), calibration)
    assert built and json.loads(path.read_bytes()) == {"plan": ["FP16", "INT8", "TF32"]}

    builder = _last_builder()
    config = builder.config
    assert config is not None
    batch = calibrator.CALIBRATION_BATCH
    assert config.calibration_profile is not None
    assert config.calibration_profile.shapes == {"input_tensor:0": ((batch, *IMAGE_SHAPE),) * 3}
    assert config.int8_calibrator.base_initialised  # the pybind11 base was initialised
    assert config.int8_calibrator.get_batch_size() == 1  # explicit batch: in the shape
    # Every image, in order, in full batches (the last padded from the start), at the addresses fed.
    expected = calibrator.fixed_size_batches(calibration.batches(batch), batch)
    assert len(builder.fed) == len(expected) == 2
    for fed, wanted in zip(builder.fed, expected, strict=True):
        np.testing.assert_array_equal(fed, wanted)
    calibration_cache = calibration_cache_file(cache.root, spec)
    assert calibration_cache is not None and calibration_cache.read_bytes() == b"scales:2"
    assert fake_cuda.live() == 0  # the calibrator's device buffer is freed after the build

    other = tensorrt_engine_spec("resnet50", "a" * 64, "int8", 256, calibration)
    assert other.key != spec.key
    assert tensorrt_engine(cache, other, _model(tmp_path), calibration)[1]
    assert _last_builder().cache_read == b"scales:2" and _last_builder().fed == []


def test_calibration_that_does_not_fit_the_network_fails_clearly(
    fake_trt: type[FakeTensorRT],
    fake_cuda: FakeCudart,
    tmp_path: Path,
    calibration: CalibrationSet,
) -> None:
    cache = EngineCache(tmp_path / "engines")
    spec = tensorrt_engine_spec("resnet50", "a" * 64, "int8", 8, calibration)
    with pytest.raises(
        HarnessError, match=r"int8 calibration failed: calibration batch .* does not fit"
    ):
        tensorrt_engine(cache, spec, _model(tmp_path, (-1, 3, 8, 8)), calibration)
    assert not cache.directory(spec).exists()
    assert fake_cuda.live() == 0


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            {"errors": ["Unsupported operator NonMaxSuppression"]},
            "cannot parse .*NonMaxSuppression",
        ),
        ({"shape": (8, *IMAGE_SHAPE)}, "no dynamic batch dimension"),
        ({"fail": True}, "could not build a fp16 engine"),
    ],
)
def test_build_failures_are_clear_and_leave_no_engine(
    fake_trt: type[FakeTensorRT],
    fake_cuda: FakeCudart,
    tmp_path: Path,
    model: dict[str, Any],
    message: str,
) -> None:
    Builder.fail = bool(model.pop("fail", False))
    shape = model.pop("shape", (-1, *IMAGE_SHAPE))
    cache = EngineCache(tmp_path / "engines")
    spec = tensorrt_engine_spec("resnet50", "a" * 64, "fp16", 8, None)
    with pytest.raises(HarnessError, match=message):
        tensorrt_engine(cache, spec, _model(tmp_path, shape, **model), None)
    assert not cache.directory(spec).exists()


def test_a_spec_for_another_host_is_not_built_here(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    spec = tensorrt_engine_spec(
        "resnet50", "a" * 64, "fp16", 8, None, tensorrt_version="10.5.0", device="NVIDIA H200 sm_90"
    )
    with pytest.raises(
        HarnessError, match=r"for TensorRT 10\.5\.0 on NVIDIA H200 sm_90, but this host"
    ):
        tensorrt_engine(EngineCache(tmp_path), spec, _model(tmp_path), None)
    assert FakeTensorRT.builders == []


# --- runner ---------------------------------------------------------------------------------------

SAMPLE = (2, 2)
MAX_BATCH = 4


def _engine(tmp_path: Path, op: str = "argmax") -> Path:
    tensors = [
        {"name": "input_tensor:0", "mode": "input", "dtype": "float32", "shape": [-1, *SAMPLE]}
    ]
    if op == "argmax":
        tensors += [
            {"name": "ArgMax:0", "mode": "output", "dtype": "int64", "shape": [-1]},
            {"name": "scores", "mode": "output", "dtype": "float32", "shape": [-1, 2]},
        ]
    else:
        tensors += [{"name": "copy", "mode": "output", "dtype": "float32", "shape": [-1, *SAMPLE]}]
    path = tmp_path / "model.plan"
    path.write_text(json.dumps({"tensors": tensors, "max_batch": MAX_BATCH, "op": op}))
    return path


def _samples(count: int, seed: int = 0) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).random((count, *SAMPLE), dtype=np.float32)


def test_runner_stages_runs_and_returns_the_output_rows(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    runner = TensorRTRunner(_engine(tmp_path), "ArgMax:0")
    with runner:
        assert runner.max_batch == MAX_BATCH
        # Device buffers for every I/O tensor at the largest batch, pinned staging for input and output.
        assert sorted(ctypes.sizeof(b) for b in fake_cuda.device.values()) == [32, 32, 64]
        assert sorted(ctypes.sizeof(b) for b in fake_cuda.host.values()) == [32, 64]
        for count in (3, MAX_BATCH, 10):  # 10: run as 4 + 4 + 2
            samples = _samples(count, seed=count)
            result = runner.infer(samples)
            assert result.dtype == np.int64 and result.shape == (count,)
            np.testing.assert_array_equal(result, samples.reshape(count, -1).argmax(axis=1))
        assert runner._context.input_shapes[-3:] == [(4, *SAMPLE), (4, *SAMPLE), (2, *SAMPLE)]
        assert runner.infer(_samples(0)).shape == (0,)
        for bad in (_samples(2).astype(np.float64), np.zeros((2, 2, 3), dtype=np.float32)):
            with pytest.raises(HarnessError, match="takes float32 samples of shape"):
                runner.infer(bad)
    assert fake_cuda.live() == 0  # deactivate freed every buffer and the stream
    runner.deactivate()  # twice is fine
    with pytest.raises(HarnessError, match="not active"):
        runner.infer(_samples(1))


def test_runner_output_choice(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    samples = _samples(3)
    with TensorRTRunner(_engine(tmp_path), "scores") as runner:
        np.testing.assert_array_equal(runner.infer(samples), samples.reshape(3, -1)[:, :2] * 2)
    with TensorRTRunner(_engine(tmp_path)) as runner:  # none named: the first output
        assert runner.infer(samples).dtype == np.int64
    with pytest.raises(HarnessError, match="no output 'logits'"):
        TensorRTRunner(_engine(tmp_path), "logits").activate()
    assert fake_cuda.live() == 0


def test_runner_threads_take_turns(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    failures: list[str] = []
    with TensorRTRunner(_engine(tmp_path), "ArgMax:0") as runner:

        def work(seed: int) -> None:
            rng = np.random.default_rng(seed)
            for _ in range(50):
                samples = _samples(int(rng.integers(1, 7)), int(rng.integers(1 << 30)))
                if not np.array_equal(
                    runner.infer(samples), samples.reshape(len(samples), -1).argmax(axis=1)
                ):
                    failures.append(f"thread {seed}")

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def test_runner_failures_are_clear_and_leak_nothing(
    fake_trt: type[FakeTensorRT], fake_cuda: FakeCudart, tmp_path: Path
) -> None:
    with pytest.raises(HarnessError, match="engine not found"):
        TensorRTRunner(tmp_path / "absent.plan").activate()
    corrupt = tmp_path / "corrupt.plan"
    corrupt.write_bytes(b"\x00not a plan")
    with pytest.raises(
        HarnessError, match=r"cannot load the engine .*rebuild it with generate_engines"
    ):
        TensorRTRunner(corrupt).activate()
    fake_cuda.fail_malloc_after = 1  # the second device buffer cannot be had
    with pytest.raises(
        HarnessError, match=r"CUDA cudaMalloc\(\d+\) failed: cudaErrorMemoryAllocation"
    ):
        TensorRTRunner(_engine(tmp_path)).activate()
    assert fake_cuda.live() == 0


def _gpu_problem() -> str | None:
    """Why the real-CUDA runner test cannot run here, or None when it can."""
    try:
        from mlperf_harness.backends.tensorrt.libraries import import_cudart

        cudart = import_cudart()
    except HarnessError:
        return "no cuda-python"
    error, count = cudart.cudaGetDeviceCount()
    return None if int(getattr(error, "value", error)) == 0 and count > 0 else "no CUDA device"


@pytest.mark.skipif(_gpu_problem() is not None, reason="needs cuda-python and a CUDA GPU")
def test_runner_on_real_cuda_with_a_fake_engine(
    fake_trt: type[FakeTensorRT], tmp_path: Path
) -> None:
    """Real cudaMalloc, cudaMallocHost, streams and copies; the "engine" copies input to output on
    the GPU, so what comes back went host -> pinned -> device -> device -> pinned -> host."""
    with TensorRTRunner(_engine(tmp_path, op="device-copy"), "copy") as runner:
        for count in (1, 3, MAX_BATCH, 11):
            samples = _samples(count, seed=count)
            np.testing.assert_array_equal(runner.infer(samples), samples)
