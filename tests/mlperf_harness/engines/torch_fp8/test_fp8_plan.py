"""How the FP8 planner rewrites a graph (engines/torch_fp8/plan.py): which convolutions run in
FP8, what each fuses and stores, and what it refuses; numpy and onnx only."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from fp8_graphs import INPUT, OUTPUT, WIDTH, bottleneck_graph
from onnx import helper, numpy_helper

from mlperf_harness.engines.torch_fp8 import plan, scales
from mlperf_harness.engines.torch_fp8.scales import E4M3_MAX
from mlperf_harness.errors import HarnessError


def _amax(model: onnx.ModelProto) -> dict[str, float]:
    return {name: 2.0 + index for index, name in enumerate(plan.calibrated_tensors(model))}


def test_calibration_covers_what_is_read_in_e4m3() -> None:
    model = bottleneck_graph()
    assert plan.calibrated_tensors(model) == [
        "block1/add/relu",  # block 2's input (its 1x1 reduce) and residual
        "block1/conv1/out/relu",
        "block1/conv2/out/relu",
        "block1/shortcut/out",  # block 1's residual, made by its projection shortcut
        "block2/conv1/out/relu",
        "block2/conv2/out/relu",
        "pool",  # block 1's input: its reduce and projection shortcut read it
    ]


def test_bottlenecks_fuse_their_tails_and_store_what_their_readers_need() -> None:
    model = bottleneck_graph()
    amax = _amax(model)
    planned = plan.plan_fp8(model, amax)
    by_name = {layer.name: layer for layer in planned.layers}
    assert len(planned.layers) == 7  # every bottleneck convolution; the 3-channel stem stays fp16
    assert "stem/out" not in by_name

    reduce = by_name["block1/conv1/out"]  # reads the fused max pool's e4m3, feeds only the 3x3
    assert (reduce.input_fp16, reduce.relu, reduce.store16, reduce.store8) == (
        False,
        True,
        False,
        True,
    )
    assert reduce.alpha == pytest.approx(
        scales.weight_scales(
            next(
                numpy_helper.to_array(init)
                for init in model.graph.initializer
                if init.name == "block1/conv1/w"
            )
        )
        * amax["pool"]
        / E4M3_MAX
    )
    assert reduce.out8_scale == pytest.approx(E4M3_MAX / amax["block1/conv1/out/relu"])

    # + projection shortcut, relu; read by a convolution and a fused Add, both in e4m3: no fp16.
    expand = by_name["block1/conv3/out"]
    assert expand.residual == "block1/shortcut/out" and expand.relu
    assert expand.residual_scale == pytest.approx(amax["block1/shortcut/out"] / E4M3_MAX)
    assert expand.output == "block1/add/relu" and (expand.store16, expand.store8) == (False, True)
    assert expand.out8_scale == pytest.approx(E4M3_MAX / amax["block1/add/relu"])
    shortcut = by_name["block1/shortcut/out"]  # read only by the fused Add: e4m3, no relu
    assert (shortcut.relu, shortcut.store16, shortcut.store8, shortcut.residual) == (
        False,
        False,
        True,
        None,
    )
    assert shortcut.out8_scale == pytest.approx(E4M3_MAX / amax["block1/shortcut/out"])
    last = by_name["block2/conv3/out"]  # identity shortcut; read by the pooling head only
    assert last.residual == "block1/add/relu" and (last.store16, last.store8) == (True, False)
    assert last.residual_scale == pytest.approx(amax["block1/add/relu"] / E4M3_MAX)

    three = by_name["block1/conv2/out"]
    assert (
        three.kernel == (3, 3) and three.pads == (1, 1, 1, 1) and three.channels == (WIDTH, WIDTH)
    )
    assert three.weights.shape == (WIDTH, 3, 3, WIDTH)  # [K, R, S, C]
    # alpha dequantizes the sum: the weights' per-channel scale times the input's scale.
    weights = next(
        numpy_helper.to_array(init)
        for init in model.graph.initializer
        if init.name == "block1/conv2/w"
    )
    weight_scales = np.abs(weights).reshape(WIDTH, -1).max(axis=1) / E4M3_MAX
    np.testing.assert_allclose(
        three.alpha, weight_scales * amax["block1/conv1/out/relu"] / E4M3_MAX, rtol=1e-6
    )


def test_with_the_residual_stream_in_fp16_the_adds_read_fp16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plan, "RESIDUAL_E4M3", False)
    model = bottleneck_graph()
    assert "block1/shortcut/out" not in plan.calibrated_tensors(model)
    by_name = {layer.name: layer for layer in plan.plan_fp8(model, _amax(model)).layers}
    expand, shortcut = by_name["block1/conv3/out"], by_name["block1/shortcut/out"]
    assert expand.residual_scale == 0.0 and (expand.store16, expand.store8) == (True, True)
    assert (shortcut.store16, shortcut.store8) == (True, False)


def test_the_stem_s_relu_and_max_pool_become_one_pool_storing_e4m3() -> None:
    # A stem of stride 1, which the fused stem kernel does not compute: its pool stays a node.
    model = bottleneck_graph(stem_stride=1)
    amax = _amax(model)
    planned = plan.plan_fp8(model, amax)
    assert planned.stems == ()
    (pool,) = planned.pools
    assert pool == plan.Fp8PoolLayer(
        name="pool",
        input="stem/out",  # before the stem's Relu, which the pool applies
        relu=True,
        kernel=3,
        stride=2,
        pads=(1, 1, 1, 1),
        store16=False,  # only FP8 convolutions read it
        out8_scale=pool.out8_scale,
        bias=pool.bias,
    )
    assert pool.out8_scale == pytest.approx(E4M3_MAX / amax["pool"])
    node = next(node for node in planned.model.graph.node if node.op_type == "Fp8MaxPool")
    assert list(node.input) == ["stem/out"] and list(node.output) == ["", "pool" + plan.FP8_SUFFIX]
    # The stem's bias moved into the pool (as the fp16 values the fp16 graph held); the stem's
    # Conv lost it.
    stem_bias = next(i for i in model.graph.initializer if i.name == "stem/b")
    want = onnx.numpy_helper.to_array(stem_bias).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(pool.bias, want)
    (stem,) = [node for node in planned.model.graph.node if node.op_type == "Conv"]
    assert list(stem.input) == [INPUT, "stem/w"]


def test_the_stem_s_conv_relu_and_max_pool_become_one_fused_stem() -> None:
    model = bottleneck_graph()
    amax = _amax(model)
    planned = plan.plan_fp8(model, amax)
    assert planned.pools == ()
    (stem,) = planned.stems
    assert stem == plan.Fp8StemLayer(
        name="pool",
        input=INPUT,
        weights=stem.weights,
        bias=stem.bias,
        pads=(1, 1, 1, 1),
        pool_pads=(1, 1, 1, 1),
        out8_scale=stem.out8_scale,
    )
    assert stem.out8_scale == pytest.approx(E4M3_MAX / amax["pool"])
    assert "the stem and its max pool as one node" in planned.summary()
    # The weights [K, R, S, C], the input's channels padded to INPUT_CHANNELS with zeros, and
    # weights and bias as the fp16 graph held them.
    initial = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    weights = initial["stem/w"].astype(np.float16).astype(np.float32)
    assert stem.kernel == (3, 3) and stem.channels == (plan.INPUT_CHANNELS, WIDTH)
    np.testing.assert_array_equal(stem.weights[..., :3], weights.transpose(0, 2, 3, 1))
    assert not stem.weights[..., 3:].any()
    np.testing.assert_array_equal(
        stem.bias, initial["stem/b"].astype(np.float16).astype(np.float32)
    )
    (node,) = [node for node in planned.model.graph.node if node.op_type == "Fp8StemPool"]
    assert node.domain == plan.FP8_DOMAIN and f"{node.domain}::{node.op_type}" == plan.FP8_STEM_POOL
    assert list(node.input) == [INPUT] and list(node.output) == ["pool" + plan.FP8_SUFFIX]
    assert node.attribute[0].name == "layer" and node.attribute[0].i == 0
    # The FP8 convolutions reading the pool read its e4m3 form.
    readers = [node for node in planned.model.graph.node if "pool" + plan.FP8_SUFFIX in node.input]
    assert {node.op_type for node in readers} == {"Fp8Conv"} and len(readers) == 2
    # The input pass still pads the input: the stem's node reads it with 4 channels.
    assert planned.input_channels == plan.INPUT_CHANNELS


def _with_attribute(model: onnx.ModelProto, output: str, **values: object) -> onnx.ModelProto:
    """The model with the node making `output` given these attribute values."""
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    node = next(node for node in changed.graph.node if output in node.output)
    for name, value in values.items():
        kept = [attribute for attribute in node.attribute if attribute.name != name]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute(name, value)])
    return changed


@pytest.mark.parametrize(
    "change",
    [
        "stride 1",
        "asymmetric padding",
        "another pool",
        "an input read by another node",
        "output channels",
        "filter size",
    ],
)
def test_a_stem_the_fused_kernel_does_not_compute_keeps_its_pool(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = bottleneck_graph()
    if change == "stride 1":
        model = bottleneck_graph(stem_stride=1)
    elif change == "asymmetric padding":
        model = _with_attribute(model, "stem/out", pads=[1, 1, 0, 0])
    elif change == "another pool":  # 2x2, stride 2, no padding
        model = _with_attribute(model, "pool", kernel_shape=[2, 2], pads=[0, 0, 0, 0])
    elif change == "an input read by another node":  # so not padded to 4 channels
        model.graph.node.append(helper.make_node("Identity", [INPUT], ["copy"]))
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info("copy"))
    elif change == "output channels":
        monkeypatch.setattr(plan, "STEM_CHANNELS", (64,))
    else:
        monkeypatch.setattr(plan, "STEM_TAPS", range(5, 8))
    planned = plan.plan_fp8(model, _amax(model))
    assert planned.stems == ()
    (pool,) = planned.pools  # the pool of its own, the stem's bias moved into it
    assert pool.relu and pool.bias.size == WIDTH
    ops = [node.op_type for node in planned.model.graph.node]
    assert ops.count("Fp8MaxPool") == 1 and "Fp8StemPool" not in ops and ops.count("Conv") == 1


@pytest.mark.parametrize("stem_stride", [2, 1])
def test_tensorflow_s_same_pooling_is_fused_with_its_padding(stem_stride: int) -> None:
    """tf2onnx writes TensorFlow's SAME max pool with padding after the last row and column only:
    fused all the same, as the stem (stride 2) or as a pool of its own (stride 1)."""
    model = _with_attribute(bottleneck_graph(stem_stride=stem_stride), "pool", pads=[0, 0, 1, 1])
    planned = plan.plan_fp8(model, _amax(model))
    if stem_stride == 2:
        (stem,) = planned.stems
        assert stem.pool_pads == (0, 0, 1, 1) and planned.pools == ()
    else:
        (pool,) = planned.pools
        assert pool.pads == (0, 0, 1, 1) and planned.stems == ()


def test_a_stem_whose_output_is_read_elsewhere_keeps_its_bias() -> None:
    model = bottleneck_graph()
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info("stem/out"))
    planned = plan.plan_fp8(model, _amax(model))
    (pool,) = planned.pools
    assert pool.bias.size == 0
    (stem,) = [node for node in planned.model.graph.node if node.op_type == "Conv"]
    assert list(stem.input) == [INPUT, "stem/w", "stem/b"]


def test_a_max_pool_read_by_anything_but_fp8_convolutions_stays() -> None:
    model = bottleneck_graph()
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info("pool"))
    planned = plan.plan_fp8(model, _amax(model))
    assert planned.pools == ()
    assert [layer.name for layer in planned.layers if layer.input_fp16] == [
        "block1/conv1/out",
        "block1/shortcut/out",
    ]


@pytest.mark.parametrize("stem_stride", [2, 1])
def test_the_rewritten_graph_runs_in_order_and_keeps_only_what_is_left(stem_stride: int) -> None:
    model = bottleneck_graph(stem_stride=stem_stride)
    planned = plan.plan_fp8(model, _amax(model))
    graph = planned.model.graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("Fp8Conv") == 7 and "Add" not in ops
    assert "Relu" not in ops and "MaxPool" not in ops
    if stem_stride == 2:  # the fused stem: its Conv, Relu and MaxPool one node
        assert ops.count("Fp8StemPool") == 1 and "Fp8MaxPool" not in ops and "Conv" not in ops
    else:
        assert ops.count("Fp8MaxPool") == 1 and ops.count("Conv") == 1  # the stem's
    available = {INPUT} | {init.name for init in graph.initializer}
    for node in graph.node:
        missing = [name for name in node.input if name and name not in available]
        assert not missing, f"{node.name} reads {missing} before it is made"
        available.update(name for name in node.output if name)
    assert OUTPUT in available
    # The folded-away convolutions' weights are gone from the graph (the plan holds them), and so is
    # the stem's bias (the pool adds it), and the stem's weights where its node holds them.
    kept = {init.name for init in graph.initializer}
    assert kept == (set() if stem_stride == 2 else {"stem/w"})
    assert [layer for layer in planned.layers if layer.input_fp16] == []


def test_refusals_name_the_problem() -> None:
    model = bottleneck_graph()
    amax = _amax(model)
    del amax["block1/conv2/out/relu"]
    with pytest.raises(HarnessError, match="no range for tensor 'block1/conv2/out/relu'"):
        plan.plan_fp8(model, amax)
    no_convs = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", 1, [1, 4])],
            [helper.make_tensor_value_info("y", 1, [1, 4])],
        )
    )
    with pytest.raises(HarnessError, match="no convolution the FP8 engine can run"):
        plan.plan_fp8(no_convs, {})


def test_the_stem_reads_the_input_padded_to_four_channels() -> None:
    model = bottleneck_graph(stem_stride=1)  # a stem left a Conv (the fused one: test above)
    planned = plan.plan_fp8(model, _amax(model))
    assert planned.input_channels == plan.INPUT_CHANNELS == 4
    original = next(i for i in model.graph.initializer if i.name == "stem/w")
    padded = next(i for i in planned.model.graph.initializer if i.name == "stem/w")
    before, after = numpy_helper.to_array(original), numpy_helper.to_array(padded)
    assert after.shape == (before.shape[0], 4, *before.shape[2:])
    np.testing.assert_array_equal(after[:, :3], before)
    assert not after[:, 3:].any()
    # The planner leaves its argument alone: the caller's model still reads 3 channels.
    assert numpy_helper.to_array(original).shape[1] == 3


def test_an_input_read_by_anything_but_convolutions_is_not_padded() -> None:
    model = bottleneck_graph()
    model.graph.node.append(helper.make_node("Identity", [INPUT], ["copy"]))
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info("copy"))
    planned = plan.plan_fp8(model, _amax(model))
    assert planned.input_channels is None and planned.stems == ()
