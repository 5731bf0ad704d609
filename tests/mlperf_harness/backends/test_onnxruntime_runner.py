"""The ONNX Runtime runner with a model of several inputs and outputs (BERT's shape): packed sample
rows are split into the named inputs and cast to their types; named outputs come back stacked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner
from mlperf_harness.errors import HarnessError
from mlperf_harness.onnx_model import make_model

WIDTH = 4


@pytest.fixture(scope="module")
def three_in_two_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """first = float(ids + mask), second = float(segments), each [N, WIDTH]."""
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["N", WIDTH])
        for name in ("ids", "mask", "segments")
    ]
    outputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", WIDTH])
        for name in ("first", "second")
    ]
    nodes = [
        helper.make_node("Add", ["ids", "mask"], ["sum"]),
        helper.make_node("Cast", ["sum"], ["first"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["segments"], ["second"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(nodes, "three_in_two_out", inputs, outputs)
    model = make_model(graph, 13)
    path = tmp_path_factory.mktemp("model") / "model.onnx"
    onnx.save(model, path)
    return path


def test_packed_rows_are_split_cast_and_outputs_stacked(three_in_two_out: Path) -> None:
    runner = OnnxRuntimeRunner(
        three_in_two_out,
        packed_inputs=("ids", "mask", "segments"),
        stacked_outputs=("first", "second"),
    )
    rows = np.arange(2 * 3 * WIDTH, dtype=np.int32).reshape(2, 3 * WIDTH)  # int32, as stored
    with runner:
        out = runner.infer(rows)
    ids, mask, segments = rows[:, :WIDTH], rows[:, WIDTH : 2 * WIDTH], rows[:, 2 * WIDTH :]
    assert out.shape == (2, WIDTH, 2) and out.dtype == np.float32
    np.testing.assert_array_equal(out[..., 0], ids + mask)
    np.testing.assert_array_equal(out[..., 1], segments)


def test_names_the_model_lacks_are_one_line(three_in_two_out: Path) -> None:
    with pytest.raises(HarnessError, match=r"has no input 'input_ids' \(it has ids, mask"):
        OnnxRuntimeRunner(three_in_two_out, packed_inputs=("input_ids",)).activate()
    with pytest.raises(HarnessError, match=r"has no output 'logits' \(it has first, second\)"):
        OnnxRuntimeRunner(
            three_in_two_out, packed_inputs=("ids", "mask", "segments"), stacked_outputs=("logits",)
        ).activate()
