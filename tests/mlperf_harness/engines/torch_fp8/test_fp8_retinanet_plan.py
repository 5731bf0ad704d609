"""The FP8 planner (engines/torch_fp8/plan.py) on RetinaNet's graph, the stand-in's topology at its
width: which convolutions run in FP8 (the ungrouped ones reading 32 channels or more), how the
FPN's lateral and upsampled sum fuse, the heads' weights shared over the pyramid levels, and the
class logits kept in fp16 on request; numpy and onnx only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from mlperf_harness.benchmarks.retinanet.quantization import class_logit_convolutions
from mlperf_harness.benchmarks.retinanet.stand_in import WIDTH
from mlperf_harness.benchmarks.retinanet.stand_in_model import (
    LEVELS,
    random_weights,
    retinanet_model,
)
from mlperf_harness.engines.torch_aot.onnx_to_torch import attributes
from mlperf_harness.engines.torch_fp8 import plan
from mlperf_harness.engines.torch_fp8.scales import E4M3_MAX
from mlperf_harness.errors import HarnessError


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return retinanet_model(random_weights(WIDTH, 0), WIDTH, "test", {})


def _amax(model: onnx.ModelProto, fp16_convs: tuple[str, ...] = ()) -> dict[str, float]:
    return {
        name: 1.0 + index for index, name in enumerate(plan.calibrated_tensors(model, fp16_convs))
    }


def _conv_channels(model: onnx.ModelProto) -> dict[str, tuple[int, int]]:
    """Each Conv's output name: (groups, input channels per group)."""
    dims = {init.name: tuple(init.dims) for init in model.graph.initializer}
    return {
        node.output[0]: (int(attributes(node).get("group", 1)), int(dims[node.input[1]][1]))
        for node in model.graph.node
        if node.op_type == "Conv"
    }


def test_every_ungrouped_convolution_of_32_or_more_input_channels_runs_in_fp8(
    model: onnx.ModelProto,
) -> None:
    planned = plan.plan_fp8(model, _amax(model))
    channels = _conv_channels(model)
    fp8 = {layer.name for layer in planned.layers}
    left = {node.output[0] for node in planned.model.graph.node if node.op_type == "Conv"}
    assert fp8 | left == set(channels) and not fp8 & left
    for name, (groups, inputs) in channels.items():
        assert (name in fp8) == (groups == 1 and inputs % plan.CHANNEL_MULTIPLE == 0), name
    # What stays fp16 at this width: the stem, ResNeXt's grouped 3x3s, and the two 1x1s reading
    # the stem's 16 channels; both heads' last convolutions (36 and 72 outputs) run in FP8.
    assert {name for name in left if channels[name][0] == 1} == {
        "stem_out_pre",
        "layer1.0.a_pre",
        "layer1.0.skip",
    }
    assert all(f"cls_logits_p{level}" in fp8 for level in LEVELS)
    assert all(f"bbox_pred_p{level}" in fp8 for level in LEVELS)


def test_the_fpn_lateral_fuses_the_upsampled_sum_as_an_fp16_residual(
    model: onnx.ModelProto,
) -> None:
    layers = {layer.name: layer for layer in plan.plan_fp8(model, _amax(model)).layers}
    lateral = layers["fpn.inner_c4"]
    assert lateral.residual == "fpn.up_c4"  # the Resize's output: no fused convolution makes it
    assert lateral.residual_scale == 0.0  # so read in fp16
    assert not lateral.relu
    # The sum feeds the 3x3 (in e4m3) and the next upsampling (in fp16): both stored.
    assert lateral.output == "fpn.merged_c4" and lateral.store8 and lateral.store16
    # The finest level's sum has no upsampling after it: e4m3 only.
    finest = layers["fpn.inner_c3"]
    assert finest.residual == "fpn.up_c3" and finest.store8 and not finest.store16
    # P6 feeds the towers (e4m3) and the ReLU before P7 (fp16), which P7 quantizes as it loads.
    assert layers["p6"].store8 and layers["p6"].store16 and not layers["p6"].relu
    assert layers["p7"].input == "p6_relu" and layers["p7"].input_fp16


def test_the_heads_share_their_weights_over_the_levels_with_each_level_s_input_scale(
    model: onnx.ModelProto,
) -> None:
    amax = _amax(model)
    planned = plan.plan_fp8(model, amax)
    layers = {layer.name: layer for layer in planned.layers}
    towers = [layers[f"cls_tower0_p{level}_pre"] for level in LEVELS]
    assert {layer.weights_name for layer in towers} == {"cls_tower.0.weight"}
    for layer in towers[1:]:
        np.testing.assert_array_equal(layer.weights, towers[0].weights)
    # Each level's input has its own calibrated range, so its own scale and alpha.
    assert [layer.in_scale for layer in towers] == [
        1.0 / (amax[f"p{level}"] / E4M3_MAX) for level in LEVELS
    ]
    assert len({float(layer.alpha[0]) for layer in towers}) == len(LEVELS)
    # The backbone's and FPN's weights are each used once: nothing named to share.
    assert layers["fpn.inner_c4"].weights_name == ""
    # 2 towers x 4 + 2 final convolutions, each over 5 levels, then one set of weights each.
    heads = [layer for layer in planned.layers if layer.weights_name]
    assert len(heads) == 10 * len(LEVELS)
    assert f"{len(planned.layers) - len(heads) + 10} sets of weights" in planned.summary()
    # The heads' outputs are read by reshapes: fp16 only.
    for level in LEVELS:
        for name in (f"cls_logits_p{level}", f"bbox_pred_p{level}"):
            assert layers[name].store16 and not layers[name].store8


def test_the_class_logits_stay_fp16_when_named(model: onnx.ModelProto, tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    logits = class_logit_convolutions(path)  # what the RetinaNet engine names
    assert len(logits) == len(LEVELS)
    planned = plan.plan_fp8(model, _amax(model, logits), logits)
    layers = {layer.name: layer for layer in planned.layers}
    kept = [node for node in planned.model.graph.node if node.name in logits]
    assert [node.op_type for node in kept] == ["Conv"] * len(LEVELS)
    assert not any(name.startswith("cls_logits") for name in layers)
    # Their inputs, the class towers' last outputs, are now needed in fp16 only.
    for level in LEVELS:
        tower = layers[f"cls_tower_p{level}_pre"]
        assert tower.store16 and not tower.store8
    assert "cls_tower_p3" not in plan.calibrated_tensors(model, logits)
    assert "cls_tower_p3" in plan.calibrated_tensors(model)
    assert "5 kept in fp16 by choice" in planned.summary()
    assert planned.fp16_convs == tuple(sorted(logits))


def test_a_convolution_to_keep_that_the_model_lacks_is_refused(model: onnx.ModelProto) -> None:
    with pytest.raises(HarnessError, match="no convolution 'cls_logits_p9' in the model"):
        plan.calibrated_tensors(model, ("cls_logits_p9",))
