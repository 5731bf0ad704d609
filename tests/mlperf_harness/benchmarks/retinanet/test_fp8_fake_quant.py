"""The FP8 plan's rounding as ONNX fake quantization (benchmarks/retinanet/fp8_fake_quant.py), run
by ONNX Runtime on the FP8 tests' bottleneck graph: the weights it rounds are e4m3 values per
channel, the tensors it rounds are the ones the plan reads in e4m3, and the model runs; numpy, onnx
and ONNX Runtime only."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import pytest
from fp8_graphs import INPUT, OUTPUT, bottleneck_graph
from onnx import numpy_helper

from mlperf_harness.benchmarks.retinanet.fp8_fake_quant import fake_quant_model
from mlperf_harness.engines.torch_fp8 import plan, scales


def _amax(model: onnx.ModelProto) -> dict[str, float]:
    return {name: 3.0 for name in plan.calibrated_tensors(model)}


def _run(model: onnx.ModelProto, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run([OUTPUT], {INPUT: x})[0])


def test_the_fp8_convolutions_weights_are_rounded_to_e4m3_per_channel() -> None:
    model = bottleneck_graph()
    rounded = fake_quant_model(model, _amax(model), weights=True, activations=False)
    fp8_convs = {layer.name for layer in plan.plan_fp8(model, _amax(model)).layers}
    weights = {init.name: numpy_helper.to_array(init) for init in rounded.graph.initializer}
    convs = [node for node in rounded.graph.node if node.op_type == "Conv"]
    assert {node.output[0] for node in convs if node.input[1].endswith("/e4m3")} == fp8_convs
    for node in convs:
        if node.output[0] in fp8_convs:
            array = weights[node.input[1]]
            per_channel = scales.weight_scales(array).reshape(-1, 1, 1, 1)
            # e4m3 values times the channel's scale (up to the float32 rounding of that product)
            scaled = array / per_channel
            np.testing.assert_allclose(scales.round_to_e4m3(scaled), scaled, rtol=1e-6)
    # The unrounded weights are gone; the stem's (fp16 in the engine) stay as they were.
    assert not {name.removesuffix("/e4m3") for name in weights if name.endswith("/e4m3")} & set(
        weights
    )
    assert "stem/w" in weights


@pytest.mark.parametrize("residuals", [True, False])
def test_the_tensors_read_in_e4m3_are_rounded_and_the_model_runs(residuals: bool) -> None:
    model = bottleneck_graph()
    amax = _amax(model)
    rounded = fake_quant_model(model, amax, weights=False, residuals=residuals)
    casts = {
        node.input[0].removesuffix("/e4m3_saturated")
        for node in rounded.graph.node
        if node.op_type == "Cast" and node.attribute[0].i == onnx.TensorProto.FLOAT8E4M3FN
    }
    residual_names = {"block1/shortcut/out", "block1/add/relu"}  # read in e4m3 by the Adds
    expected = set(plan.calibrated_tensors(model))
    assert casts == (expected if residuals else expected - {"block1/shortcut/out"})
    assert residual_names <= expected
    x = np.random.default_rng(0).random((2, 3, 32, 32), dtype=np.float32)
    exact, fake = _run(model, x), _run(rounded, x)
    assert exact.shape == fake.shape and not np.array_equal(exact, fake)
    assert np.abs(fake - exact).max() < 0.25 * np.abs(exact).max()
