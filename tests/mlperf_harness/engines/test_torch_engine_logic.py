"""The torch engine's logic that needs no torch and no GPU: the converter's op table and refusals,
the batch-norm folding (checked against ONNX Runtime), engine specs and keys, the engine's io record,
and the runner's checks before it imports torch. The GPU side runs in engines/torch_aot/device_check.py
on the lent GPU (docs/torch_engine.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
import pytest
from held_sample_support import COUNT, data, store_of
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.backends.torch_cuda.runner import (
    DeviceSamples,
    TorchRunner,
    check_engine_ladder,
    engine_for,
)
from mlperf_harness.benchmarks.resnet50 import stand_in_model as stand_in
from mlperf_harness.engines import torch_fp8 as fp8_package
from mlperf_harness.engines.cache import SPEC_FILE, EngineCache
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.engines.torch_aot import onnx_to_torch, sample_graphs
from mlperf_harness.engines.torch_aot.engine import (
    FP8_BUILDER_MODULES,
    builder_sha256,
    engine_batch_sizes,
    torch_engine,
    torch_engine_spec,
)
from mlperf_harness.engines.torch_aot.metadata import EngineIO, io_path, read_io, write_io
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.loadgen.settings import Scenario

TORCH_PRESENT = importlib.util.find_spec("torch") is not None
H100 = "NVIDIA H100 80GB HBM3-sm_90"
TORCH = "2.11.0+cu130"


def _run(model: onnx.ModelProto, x: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(list(sample_graphs.OUTPUTS), {sample_graphs.INPUT_NAME: x}))


def _one_op_model(*nodes: onnx.NodeProto, opset: int = 13) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# ---------------------------------------------------------------------------------------------------
# The op table and refusals


@pytest.mark.parametrize("opset", sample_graphs.OPSETS)
def test_coverage_graph_uses_every_supported_operator(opset: int) -> None:
    model = sample_graphs.coverage_graph(opset)
    expected = onnx_to_torch.SUPPORTED_OPS - (
        {"Resize"} if opset < sample_graphs.RESIZE_SINCE else set()
    )
    assert {node.op_type for node in model.graph.node} == expected
    onnx_to_torch.check_convertible(model)  # no error


def test_unsupported_operators_are_all_named_with_counts() -> None:
    model = _one_op_model(
        helper.make_node("Sigmoid", ["x"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["b"]),
        helper.make_node("FusedConv", ["b"], ["c"], domain="com.microsoft"),
        helper.make_node("Relu", ["c"], ["y"]),
    )
    assert onnx_to_torch.unsupported_ops(model) == {"Sigmoid": 2, "com.microsoft::FusedConv": 1}
    with pytest.raises(HarnessError, match=r"Sigmoid \(x2\), com\.microsoft::FusedConv \(x1\)"):
        onnx_to_torch.check_convertible(model)


def test_an_opset_outside_the_known_range_is_refused() -> None:
    model = _one_op_model(helper.make_node("Relu", ["x"], ["y"]), opset=6)
    with pytest.raises(HarnessError, match="opset 6"):
        onnx_to_torch.check_convertible(model)


def test_training_mode_batch_norm_is_refused() -> None:
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"])
    with pytest.raises(HarnessError, match="extra outputs"):
        onnx_to_torch.check_convertible(_one_op_model(bn))


def test_the_stand_in_is_convertible_and_its_statistics_pass_is_not() -> None:
    convs = stand_in.all_convs()
    statistics = {
        conv.name: stand_in.BnStatistics(np.zeros(conv.out_channels), np.ones(conv.out_channels))
        for conv in convs
    }
    weights = stand_in.random_conv_weights(seed=0)
    head_weight = np.zeros((stand_in.NUM_OUTPUTS, stand_in.FEATURE_WIDTH), dtype=np.float32)
    head_bias = np.zeros(stand_in.NUM_OUTPUTS, dtype=np.float32)
    model = stand_in.classifier_graph(weights, statistics, head_weight, head_bias, seed=0)
    onnx_to_torch.check_convertible(model)
    assert onnx_to_torch.fold_batch_norms(model)[1] == 0  # its batch norms are folded already
    (batch,) = onnx_to_torch.graph_inputs(model)
    assert onnx_to_torch.input_shape(batch, 256) == (256, 3, 224, 224)
    training, _ = stand_in.training_mode_graph(weights)
    with pytest.raises(HarnessError, match="Sqrt"):
        onnx_to_torch.check_convertible(training)


def test_input_dimensions_past_the_batch_must_be_fixed() -> None:
    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", 224])
    with pytest.raises(HarnessError, match="dimension 2 is not fixed"):
        onnx_to_torch.input_shape(value, 8)


def test_load_model_refuses_missing_and_non_onnx_files(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="model not found"):
        onnx_to_torch.load_model(tmp_path / "absent.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\x00 not a protobuf at all \x00" * 10)
    with pytest.raises(HarnessError, match="not an ONNX model"):
        onnx_to_torch.load_model(junk)


@pytest.mark.skipif(TORCH_PRESENT, reason="checks the message on hosts without torch")
def test_converting_without_torch_says_so() -> None:
    with pytest.raises(HarnessError, match="PyTorch"):
        onnx_to_torch.to_torch_module(sample_graphs.coverage_graph(13))


# ---------------------------------------------------------------------------------------------------
# Batch-norm folding, against ONNX Runtime


@pytest.mark.parametrize("opset", sample_graphs.OPSETS)
def test_folding_batch_norms_is_exact_and_keeps_the_rest(opset: int) -> None:
    model = sample_graphs.coverage_graph(opset, seed=opset)
    folded, count = onnx_to_torch.fold_batch_norms(model)
    onnx.checker.check_model(folded)
    assert count == 2  # the two after convolutions; the one after a Relu stays
    ops = [node.op_type for node in folded.graph.node]
    assert ops.count("BatchNormalization") == 1
    assert len(ops) == len(model.graph.node) - 2
    assert len(folded.graph.initializer) < len(model.graph.initializer)  # originals dropped
    x = sample_graphs.random_input(16, seed=opset)
    (prob, label), (folded_prob, folded_label) = _run(model, x), _run(folded, x)
    np.testing.assert_allclose(folded_prob, prob, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(folded_label, label)
    assert len(set(label.tolist())) > 1  # the inputs are not all one class
    assert onnx_to_torch.fold_batch_norms(model)[0] != model  # the input model is not changed
    assert [n.op_type for n in model.graph.node].count("BatchNormalization") == 3


def test_a_conv_output_used_twice_is_not_folded() -> None:
    rng = np.random.default_rng(0)

    def const(name: str, *shape: int) -> TensorProto:
        return numpy_helper.from_array(rng.uniform(0.5, 1.5, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
        helper.make_node("Add", ["n", "c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
        [const("w", 2, 2, 1, 1), const("s", 2), const("b", 2), const("m", 2), const("v", 2)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert onnx_to_torch.fold_batch_norms(model)[1] == 0


# ---------------------------------------------------------------------------------------------------
# Specs and keys


def _spec(**changes: object) -> EngineSpec:
    arguments: dict[str, object] = {
        "benchmark": "resnet50",
        "model_sha256": "ab" * 32,
        "precision": "fp16",
        "batch_size": 256,
        "channels_last": True,
        "max_autotune": False,
        "device": H100,
        "torch_version": TORCH,
    }
    arguments.update(changes)
    return torch_engine_spec(**arguments)  # type: ignore[arg-type]


def test_spec_records_what_the_engine_is_built_from() -> None:
    spec = _spec()
    assert (spec.backend, spec.precision, spec.batch_size, spec.device) == (
        "torch",
        "fp16",
        256,
        H100,
    )
    assert dict(spec.options) == {
        "channels_last": "true",
        "compiler": "aot_inductor",
        "max_autotune": "false",
        "torch": TORCH,
    }
    assert spec.name == f"torch-fp16-b256-{spec.key}"
    assert spec.key == _spec().key  # the same inputs, the same key
    assert EngineSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


@pytest.mark.parametrize(
    "change",
    [
        {"precision": "bf16"},
        {"precision": "fp32"},
        {"batch_size": 128},
        {"channels_last": False},
        {"max_autotune": True},
        {"device": "NVIDIA H200-sm_90"},
        {"torch_version": "2.12.0+cu130"},
        {"model_sha256": "cd" * 32},
        {"benchmark": "other"},
    ],
)
def test_any_input_change_changes_the_key(change: dict[str, object]) -> None:
    assert _spec(**change).key != _spec().key


def test_spec_refuses_what_the_torch_backend_does_not_build() -> None:
    with pytest.raises(HarnessError, match="tensorrt"):
        _spec(precision="int8")
    with pytest.raises(HarnessError, match="not 'fp4'"):
        _spec(precision="fp4")
    with pytest.raises(HarnessError, match="fp8 engine needs a calibration set"):
        _spec(precision="fp8")
    with pytest.raises(HarnessError, match="at least 1"):
        _spec(batch_size=0)


@dataclass(frozen=True)
class _Calibration:
    """What an fp8 spec reads of a calibration set: its hash (the samples are read at build)."""

    sha256: str
    description: str = "test samples"

    def feeds(self, batch_size: int, input_names: Sequence[str]) -> list[dict[str, object]]:
        raise AssertionError("a spec must not read the calibration samples")


def test_fp8_spec_is_keyed_by_its_calibration_and_kernel_sources() -> None:
    fp8 = _spec(precision="fp8", calibration=_Calibration("a" * 64))
    assert fp8.calibration_sha256 == "a" * 64
    assert fp8.name.startswith("torch-fp8-b256-")
    assert fp8.key != _spec(precision="fp8", calibration=_Calibration("b" * 64)).key
    # The FP8 builder's modules (kernel, plan, tuning candidates) are part of its builder key.
    assert fp8.builder_sha256 == builder_sha256(FP8_BUILDER_MODULES) != _spec().builder_sha256
    # fp16 ignores a calibration set: it calibrates nothing.
    assert _spec(calibration=_Calibration("a" * 64)).key == _spec().key


def test_every_module_the_fp8_engine_is_built_or_run_from_is_in_its_key() -> None:
    package = Path(fp8_package.__file__).parent
    modules = {f"{fp8_package.__name__}.{path.stem}" for path in package.glob("*.py")}
    # The package marker and the GPU host's checks build nothing.
    modules -= {f"{fp8_package.__name__}.__init__", f"{fp8_package.__name__}.device_check"}
    assert modules <= set(FP8_BUILDER_MODULES)


def test_builder_key_covers_the_converter_without_importing_torch() -> None:
    first = builder_sha256()
    assert first == builder_sha256() and len(first) == 64
    assert builder_sha256(("mlperf_harness.engines.torch_aot.build",)) != first
    assert "mlperf_harness.engines.torch_aot.torch_module" not in sys.modules
    with pytest.raises(HarnessError, match="cannot read the source"):
        builder_sha256(("mlperf_harness.engines.torch_aot.no_such_module",))


@pytest.mark.skipif(TORCH_PRESENT, reason="checks the message on hosts without torch")
def test_spec_for_this_host_needs_torch() -> None:
    with pytest.raises(HarnessError, match="PyTorch"):
        torch_engine_spec("resnet50", "ab" * 32, "fp16", 256)


def test_a_cached_engine_is_returned_without_building(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    spec = _spec()
    engine_dir = cache.directory(spec)
    engine_dir.mkdir(parents=True)
    (engine_dir / "model.pt2").write_bytes(b"package")
    record = {"spec": spec.to_json(), "engine_file": "model.pt2"}
    (engine_dir / SPEC_FILE).write_text(json.dumps(record))
    path, built = torch_engine(cache, spec, tmp_path / "model.onnx")
    assert (path, built) == (engine_dir / "model.pt2", False)
    other = _spec(batch_size=8)
    (tmp_path / "resnet50" / other.name).mkdir()
    (tmp_path / "resnet50" / other.name / SPEC_FILE).write_text(json.dumps(record))
    with pytest.raises(HarnessError, match="batch_size"):
        torch_engine(cache, other, tmp_path / "model.onnx")  # a mismatched record is refused


# ---------------------------------------------------------------------------------------------------
# The engine's io record and the runner's checks before torch


def _io(**changes: object) -> EngineIO:
    values: dict[str, object] = {
        "input_name": "input_tensor:0",
        "input_shape": (256, 3, 224, 224),
        "input_dtype": "float32",
        "output_names": ("softmax_tensor:0", "ArgMax:0"),
        "output_dtypes": ("float32", "int64"),
        "precision": "fp16",
        "channels_last": True,
        "torch_version": TORCH,
        "device": H100,
    }
    values.update(changes)
    return EngineIO(**values)  # type: ignore[arg-type]


def test_io_record_round_trips_and_names_outputs(tmp_path: Path) -> None:
    engine = tmp_path / "model.pt2"
    write_io(engine, _io())
    assert io_path(engine).name == "model.io.json"
    io = read_io(engine)
    assert io == _io() and io.batch_size == 256
    assert io.output_index("ArgMax:0") == 1 and io.output_index(None) == 0
    with pytest.raises(HarnessError, match="no output 'logits'"):
        io.output_index("logits")
    record = json.loads(io_path(engine).read_text())
    record["io_version"] = 0
    io_path(engine).write_text(json.dumps(record))
    with pytest.raises(HarnessError, match="another version"):
        read_io(engine)
    with pytest.raises(HarnessError, match="no readable"):
        read_io(tmp_path / "absent.pt2")


def test_runner_refuses_a_missing_engine_or_output_before_loading(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="torch engine not found"):
        TorchRunner([tmp_path / "absent.pt2"]).activate()
    engine = tmp_path / "model.pt2"
    engine.write_bytes(b"package")
    with pytest.raises(HarnessError, match="no readable"):
        TorchRunner([engine]).activate()
    write_io(engine, _io())
    with pytest.raises(HarnessError, match="no output 'probabilities'"):
        TorchRunner([engine], "probabilities").activate()


@pytest.mark.skipif(TORCH_PRESENT, reason="checks the message on hosts without torch")
def test_runner_without_torch_says_so(tmp_path: Path) -> None:
    engine = tmp_path / "model.pt2"
    engine.write_bytes(b"package")
    write_io(engine, _io())
    runner = TorchRunner([engine], "ArgMax:0")
    with pytest.raises(HarnessError, match="PyTorch"):
        runner.activate()
    with pytest.raises(HarnessError, match="not active"):
        runner.infer(np.zeros((1, 3, 224, 224), dtype=np.float32))


class CopylessDeviceSamples(DeviceSamples):
    """Stands in for the GPU's copy of the loaded samples, which needs a GPU: makes none."""

    def update(self, torch: Any, store: SampleStore) -> None:
        pass


def test_inline_round_trips_without_cuda_graphs_are_refused_in_one_line(tmp_path: Path) -> None:
    """--native_round_trips asked for, and activate() captured no graph (its capture failed): the
    first load of samples says why, before LoadGen times anything."""
    runner = TorchRunner([tmp_path / "model.pt2"], device_samples=CopylessDeviceSamples(0))
    runner.cuda_graph_error = "capture failed: operation not permitted when stream is capturing"
    assert runner.inline_round_trips(label_offset=1) is not None
    store = store_of(data(seed=0))
    store.load(range(COUNT))
    with pytest.raises(HarnessError) as refused:
        runner.samples_loaded(store)
    assert str(refused.value) == (
        "no round trips to launch from C++: no CUDA graphs (capture failed: operation not "
        "permitted when stream is capturing); run with --no-native_round_trips"
    )


def test_a_batch_runs_on_the_smallest_engine_that_holds_it() -> None:
    ladder = (32, 64, 128, 256)
    assert [engine_for(ladder, n) for n in (1, 32, 33, 64, 100, 256)] == [0, 0, 1, 1, 2, 3]
    assert engine_for(ladder, 1000) == 3  # larger than any: chunks of the largest
    assert engine_for((8,), 3) == 0


def test_server_gets_a_ladder_of_torch_engines_and_the_rest_one() -> None:
    assert engine_batch_sizes("torch", Scenario.SERVER, 128) == (128, 96, 64, 48, 32, 16)
    assert engine_batch_sizes("torch", Scenario.SERVER, 2) == (2, 1)
    assert engine_batch_sizes("torch", Scenario.OFFLINE, 256) == (256,)
    assert engine_batch_sizes("onnxruntime", Scenario.SERVER, 256) == (256,)


def test_engines_of_one_runner_must_agree_but_for_the_batch() -> None:
    check_engine_ladder([_io(input_shape=(8, 3, 224, 224)), _io()])
    with pytest.raises(HarnessError, match="same batch size given twice"):
        check_engine_ladder([_io(), _io()])
    with pytest.raises(HarnessError, match="same samples"):
        check_engine_ladder([_io(input_shape=(8, 3, 112, 112)), _io()])
    with pytest.raises(HarnessError, match="same samples"):
        check_engine_ladder([_io(input_shape=(8, 3, 224, 224), output_names=("x", "y")), _io()])
