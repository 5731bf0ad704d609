"""Which convolutions of an ONNX graph run in FP8, fused with what: numpy and onnx only.

`plan_fp8(model, amax)` takes a graph whose batch norms are folded (onnx_to_torch.load_model) and the
calibration set's maximum of every activation tensor, and returns the graph rewritten for the FP8
engine: each eligible Conv becomes one `Fp8Conv` node (domain FP8_DOMAIN) that also absorbs the Add
of a residual (the other input) and the Relu after it, the way TensorRT fuses a bottleneck's tail.
The rewritten node reads the e4m3 form of its input and writes what its consumers need: the e4m3
form (scaled for the next convolutions, and for the residual Adds that read it) when a fused
convolution reads it, the fp16 form when anything else does (the pooling head), or both.

The residual stream is e4m3 too (RESIDUAL_E4M3), as TensorRT keeps it in int8: a residual made by
a fused convolution is read in its e4m3 form with its own calibrated scale. In fp16 it was most of
the traffic of the 1x1 expansions, which are bound by their epilogue's memory traffic (read the
shortcut, write the block's output in fp16 for the next Add and in e4m3 for the next convolution;
docs/performance.md, the FP8 engine on one H200). A convolution whose input has no fused
producer (a max pool that other nodes read too) reads it in fp16 and quantizes it as it loads: no
separate cast (and no 8-bit tensor the compiler would have to make).

A max pool whose result only FP8 convolutions read (ResNet's stem: Conv, Relu, MaxPool) becomes one
`Fp8MaxPool` node with the Relu before it: one pass over the stem's fp16 output that writes the
pooled e4m3 tensor. The stem convolution's bias moves into that pass too, added after the maximum:
a per-channel constant and the fp16 rounding are monotonic, so max(round(x + b)) = round(max(x) + b)
bit for bit, and the add runs on a quarter of the pixels (torch's convolution added its bias in a
pass of its own over the whole output, 0.6 ms of a batch of 256 on an H100; torch's NHWC max pool
and the separate relu took 0.8 and 0.2 ms a batch of 256 on an H200: the `profile` of
device_check.py).

Where that convolution is the stem proper (it reads the graph's input, padded to INPUT_CHANNELS,
with stride 2, and the pool is 3x3 of stride 2 padded by 0 or 1 a side: STEM_POOL,
STEM_POOL_PADS), the Conv, Relu and MaxPool become one `Fp8StemPool` node instead
(Fp8StemLayer): stem_pool_kernel.py computes the
convolution and pools it in one kernel, so its fp16 output (411 MB a batch of 256) is never
written; or, where the build's timing found that slower (tuning.py), the node runs cuDNN's
convolution and the max pool kernel as the two nodes above did. The stem stays in fp16 either way:
its pixels quantized to e4m3 cost accuracy. Everything else (the classifier) stays as it was and
runs in fp16.

Graphs other than ResNet's (RetinaNet's, docs/retinanet.md) bring three more things, none of them
a new node. Grouped convolutions (ResNeXt's 3x3s) are not eligible and stay fp16; the 1x1 after one
quantizes their fp16 output as it loads it. An Add of a convolution and a tensor no fused
convolution makes (the FPN's lateral 1x1 plus the upsampled coarser level) is fused as an fp16
residual. Convolutions that share their weights (the heads, one Conv a pyramid level) are one layer
each, with their own input scale (each level's input has its own range) and the same e4m3
weights, which the engine holds once (`weights_name`). A caller may keep named convolutions in
fp16 (`fp16_convs`: RetinaNet's class logits, where accuracy says so); their inputs are then
stored in fp16 only, and they run in the interpreter as any other fp16 node.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

from mlperf_harness.engines.torch_aot.onnx_to_torch import attributes, op_name
from mlperf_harness.engines.torch_fp8 import scales
from mlperf_harness.errors import HarnessError

FP8_DOMAIN = "mlperf_harness.fp8"
FP8_CONV = f"{FP8_DOMAIN}::Fp8Conv"
FP8_MAX_POOL = f"{FP8_DOMAIN}::Fp8MaxPool"
FP8_STEM_POOL = f"{FP8_DOMAIN}::Fp8StemPool"
# The input's channels as the stem convolution reads them: cuDNN's first-layer kernel on Hopper
# reads 4 (k64c4r7s7) and padded the 3-channel input itself, in a pass of its own over the batch
# (nhwcAddPaddingKernel, 0.15 ms a batch of 256 on an H100); the engine's input pass writes the
# zero channel instead, at no cost, and the stem's weights get zeros to match.
INPUT_CHANNELS = 4
FP8_SUFFIX = "::e4m3"  # the e4m3 form of a tensor: its name plus this
# tl.dot's 8-bit tiles take 16 channels at least and the kernels' reduction blocks (32-128) must
# divide the input channels: the stem's 3-channel convolution stays fp16. Output channels may be
# any number (the pointer kernel masks its columns: RetinaNet's heads have 9 x 4 and 9 x classes).
CHANNEL_MULTIPLE = 32
# TMA moves tensors whose every stride but the last is a multiple of 16 bytes, and clips a tile at
# the tensor's edge: the TMA kernels run a layer whose output rows (and residual rows, laid out
# alike) are, whatever its channel count (tma_rows_aligned; RetinaNet's class logits, 9 x 264 =
# 2,376 channels stored in fp16, are; its box regression's 36 are not).
TMA_STRIDE_BYTES = 16
# The stem the fused kernel computes (stem_pool_kernel.py): the convolution's stride, the max pool's
# (window, stride) and the padding each side of it may have (PyTorch's 1, or TensorFlow's SAME: 0
# before, 1 after), the filter sizes (a filter row of up to 7 taps and a zero one is one 64-byte
# reduction block over 4 fp16 channels) and output channels (a power of two the 256-row accumulator
# holds in registers: 64 in ResNet-50).
STEM_STRIDE = 2
STEM_POOL = (3, 2)
STEM_POOL_PADS = (0, 1)
STEM_TAPS = range(3, 8)
STEM_CHANNELS = (16, 32, 64)
# Read residuals in e4m3 where a fused convolution makes them (see the module's docstring). Part of
# this module's source, so of the engine key: flipping it rebuilds the engines.
RESIDUAL_E4M3 = True


class _WeightsShape:
    """The filter size and channels of a layer's weights [K, R, S, C]."""

    weights: npt.NDArray[np.float32]

    @property
    def kernel(self) -> tuple[int, int]:
        return int(self.weights.shape[1]), int(self.weights.shape[2])

    @property
    def channels(self) -> tuple[int, int]:
        """(input channels, output channels)."""
        return int(self.weights.shape[3]), int(self.weights.shape[0])


@dataclass(frozen=True)
class Fp8ConvLayer(_WeightsShape):
    """One fused convolution: e4m3 input and weights, fp32 accumulation, then
    y = acc * alpha + bias (+ residual) (relu), stored in fp16 and/or e4m3 (times out8_scale).
    The residual is read in fp16, or in e4m3 times residual_scale when that is not 0."""

    name: str  # the ONNX Conv's output name, for messages
    input: str  # the fp16 tensor whose e4m3 form is read
    in_scale: float  # 1 / the input's e4m3 scale, used when the input is read in fp16
    input_fp16: bool  # no fused producer makes the e4m3 form: quantized as it is loaded
    weights: npt.NDArray[np.float32]  # [K, R, S, C] e4m3 values in float32
    alpha: npt.NDArray[np.float32]  # [K] input scale times weight scale
    bias: npt.NDArray[np.float32]  # [K]
    stride: int
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    residual: str | None  # tensor added before the relu (its fp16 name)
    residual_scale: float  # the residual's e4m3 scale when its e4m3 form is read; 0: read in fp16
    relu: bool
    output: str  # the fp16 name of the result (the fused chain's last tensor)
    store16: bool
    store8: bool
    out8_scale: float  # 1 / the e4m3 scale of the output (0 when not stored in e4m3)
    # The ONNX initializer of the weights: layers naming the same one (a head's Conv at each
    # pyramid level) share one copy of the e4m3 weights in the engine. "" for none shared.
    weights_name: str = ""


def tma_rows_aligned(layer: Fp8ConvLayer) -> bool:
    """Whether each NHWC tensor the layer writes or adds (its stored forms, its residual) has rows
    of output channels TMA can address (TMA_STRIDE_BYTES): fp16 rows of a multiple of 8 channels,
    e4m3 rows of a multiple of 16."""
    channels = layer.channels[1]
    residual_e4m3 = layer.residual is not None and layer.residual_scale != 0
    residual_fp16 = layer.residual is not None and layer.residual_scale == 0
    widths = [2] * (layer.store16 or residual_fp16) + [1] * (layer.store8 or residual_e4m3)
    return all(channels * width % TMA_STRIDE_BYTES == 0 for width in widths)


@dataclass(frozen=True)
class Fp8PoolLayer:
    """A max pool (square window, one stride, padding by side as ONNX gives it: TensorFlow's SAME
    pooling, as tf2onnx writes it, pads after the last row and column only) of an fp16 tensor, the
    Relu before it fused, stored in e4m3 (times out8_scale) for the FP8 convolutions that read it,
    and in fp16 too when anything else does."""

    name: str  # the pooled tensor's fp16 name
    input: str  # the fp16 tensor pooled (before the fused Relu, if any)
    relu: bool
    kernel: int
    stride: int
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    store16: bool
    out8_scale: float
    # Added after the maximum, before the Relu: the bias of the convolution that made the input
    # (moved here), as fp16 values; empty when none moved.
    bias: npt.NDArray[np.float32] = dataclasses.field(compare=False)


@dataclass(frozen=True)
class Fp8StemLayer(_WeightsShape):
    """The stem: the fp16 convolution of stride STEM_STRIDE of the graph's input, its bias, the relu
    and the STEM_POOL max pool (padded by pool_pads), stored in e4m3 (times out8_scale) for the FP8
    convolutions that read it (ops.stem_pool computes it; ops.run_stem runs it either way)."""

    name: str  # the pooled tensor's fp16 name
    input: str  # the graph's input (its channels padded to INPUT_CHANNELS)
    weights: npt.NDArray[np.float32] = dataclasses.field(compare=False)  # [K, R, S, C] fp16 values
    bias: npt.NDArray[np.float32] = dataclasses.field(compare=False)  # [K] fp16 values
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    pool_pads: tuple[int, int, int, int]  # the max pool's, likewise
    out8_scale: float


@dataclass(frozen=True)
class Fp8Plan:
    model: onnx.ModelProto  # the rewritten graph (Fp8 nodes hold their layer's index)
    layers: tuple[Fp8ConvLayer, ...]
    pools: tuple[Fp8PoolLayer, ...] = ()
    input_channels: int | None = None  # the input's channels padded to this many (None: as given)
    stems: tuple[Fp8StemLayer, ...] = ()
    fp16_convs: tuple[str, ...] = ()  # eligible convolutions the caller kept in fp16 (their names)

    def summary(self) -> str:
        fused = sum(1 for layer in self.layers if layer.residual is not None)
        on_load = sum(1 for layer in self.layers if layer.input_fp16)
        weights = {layer.weights_name or str(index) for index, layer in enumerate(self.layers)}
        shared = f", {len(weights)} sets of weights" if len(weights) < len(self.layers) else ""
        pools = f", {len(self.pools)} max pool(s) storing e4m3" if self.pools else ""
        stems = ", the stem and its max pool as one node storing e4m3" if self.stems else ""
        kept = f", {len(self.fp16_convs)} kept in fp16 by choice" if self.fp16_convs else ""
        return (
            f"{len(self.layers)} convolutions in FP8 ({fused} with their residual add fused, "
            f"{on_load} quantizing an fp16 input as they load it{shared}){pools}{stems}{kept}"
        )


def _eligible(node: onnx.NodeProto, constants: dict[str, npt.NDArray[Any]]) -> bool:
    if op_name(node) != "Conv" or len(node.input) < 2 or node.input[1] not in constants:
        return False
    if len(node.input) > 2 and node.input[2] and node.input[2] not in constants:
        return False
    weights = constants[node.input[1]]
    attrs = attributes(node)
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    return (
        weights.ndim == 4
        and int(attrs.get("group", 1)) == 1
        and all(int(d) == 1 for d in attrs.get("dilations", [1, 1]))
        and attrs.get("auto_pad", "NOTSET") in ("NOTSET", "VALID")
        and len(set(strides)) == 1
        and weights.shape[1] % CHANNEL_MULTIPLE == 0
    )


def _named(node: onnx.NodeProto, names: Collection[str]) -> bool:
    """Whether `names` holds the node's name or its (first) output's."""
    return bool(node.name and node.name in names) or node.output[0] in names


def _pads(node: onnx.NodeProto) -> tuple[int, int, int, int]:
    attrs = attributes(node)
    if attrs.get("auto_pad", "NOTSET") == "VALID":
        return (0, 0, 0, 0)
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
    return (pads[0], pads[1], pads[2], pads[3])


@dataclass
class _Chain:
    """A Conv and the Add/Relu fused into it, as ONNX nodes (by index)."""

    conv: int
    add: int | None = None
    residual: str | None = None
    relu: int | None = None

    @property
    def members(self) -> tuple[int, ...]:
        return tuple(i for i in (self.conv, self.add, self.relu) if i is not None)

    @property
    def last(self) -> int:
        return max(self.members)


def _consumers(nodes: list[onnx.NodeProto]) -> dict[str, list[int]]:
    """Each tensor's readers (node indices, in graph order)."""
    consumers: dict[str, list[int]] = defaultdict(list)
    for index, node in enumerate(nodes):
        for name in node.input:
            consumers[name].append(index)
    return consumers


def _chains(
    nodes: list[onnx.NodeProto],
    constants: dict[str, npt.NDArray[Any]],
    outputs: set[str],
    fp16_convs: Collection[str] = (),
) -> list[_Chain]:
    consumers = _consumers(nodes)

    def only_consumer(tensor: str, op: str) -> int | None:
        """The one node reading `tensor`, if it is an `op` and the tensor is no graph output."""
        readers = consumers.get(tensor, [])
        if tensor in outputs or len(readers) != 1 or op_name(nodes[readers[0]]) != op:
            return None
        return readers[0]

    claimed: set[int] = set()  # Add and Relu nodes already fused into a chain
    chains = []
    for index, node in enumerate(nodes):
        if not _eligible(node, constants) or _named(node, fp16_convs):
            continue
        chain = _Chain(conv=index)
        tensor = node.output[0]
        add = only_consumer(tensor, "Add")
        if add is not None and add not in claimed:
            other = [name for name in nodes[add].input if name != tensor]
            if len(other) == 1 and other[0] not in constants:
                chain.add, chain.residual = add, other[0]
                claimed.add(add)
                tensor = nodes[add].output[0]
        relu = only_consumer(tensor, "Relu")
        if relu is not None and relu not in claimed:
            chain.relu = relu
            claimed.add(relu)
        chains.append(chain)
    return chains


@dataclass
class _Pool:
    """A MaxPool and the Relu fused into it, as ONNX nodes (by index)."""

    pool: int
    relu: int | None
    bias_from: int | None = None  # the fp16 Conv (by index) whose bias the pool adds instead

    @property
    def members(self) -> tuple[int, ...]:
        return tuple(i for i in (self.relu, self.pool) if i is not None)


def _pools(
    nodes: list[onnx.NodeProto],
    chains: list[_Chain],
    outputs: set[str],
    constants: dict[str, npt.NDArray[Any]],
) -> list[_Pool]:
    """MaxPools whose result only fused FP8 convolutions read, with the Relu feeding them when the
    pool is that Relu's only reader, and the bias of the Conv before that Relu when the Relu is the
    Conv's only reader."""
    conv_inputs = {nodes[chain.conv].input[0] for chain in chains}
    conv_nodes = {chain.conv for chain in chains}
    readers = _consumers(nodes)
    producer = {name: index for index, node in enumerate(nodes) for name in node.output}
    pools = []
    for index, node in enumerate(nodes):
        if op_name(node) != "MaxPool" or len(node.output) != 1:
            continue
        out = node.output[0]
        attrs = attributes(node)
        kernel = [int(k) for k in attrs.get("kernel_shape", [])]
        strides = [int(k) for k in attrs.get("strides", [1, 1])]
        pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
        if (
            out not in conv_inputs
            or out in outputs
            or not all(reader in conv_nodes for reader in readers[out])
            or len(kernel) != 2
            or len(set(kernel)) != 1
            or len(set(strides)) != 1
            or len(pads) != 4
            or any(p < 0 or p >= kernel[0] for p in pads)  # a window always holds a pixel
            or int(attrs.get("ceil_mode", 0)) != 0
            or attrs.get("auto_pad", "NOTSET") != "NOTSET"
            or any(int(d) != 1 for d in attrs.get("dilations", [1, 1]))
        ):
            continue
        source = producer.get(node.input[0])
        relu = None
        if (
            source is not None
            and op_name(nodes[source]) == "Relu"
            and readers[node.input[0]] == [index]
            and node.input[0] not in outputs
        ):
            relu = source
        pools.append(_Pool(index, relu, _bias_source(nodes, relu, constants, outputs)))
    return pools


def _bias_source(
    nodes: list[onnx.NodeProto],
    relu: int | None,
    constants: dict[str, npt.NDArray[Any]],
    outputs: set[str],
) -> int | None:
    """The Conv whose output only the fused Relu reads, when its bias is a constant: the pool can
    add that bias after its maximum (the module's docstring says why that is exact)."""
    if relu is None:
        return None
    conv_out = nodes[relu].input[0]
    readers = _consumers(nodes)
    producer = {name: index for index, node in enumerate(nodes) for name in node.output}
    source = producer.get(conv_out)
    if (
        source is None
        or op_name(nodes[source]) != "Conv"
        or len(nodes[source].input) < 3
        or nodes[source].input[2] not in constants
        or readers[conv_out] != [relu]
        or conv_out in outputs
    ):
        return None
    return source


def _graph_parts(
    model: onnx.ModelProto, fp16_convs: Collection[str] = ()
) -> tuple[list[onnx.NodeProto], dict[str, npt.NDArray[Any]], set[str], list[_Chain]]:
    graph = model.graph
    nodes = list(graph.node)
    constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    outputs = {value.name for value in graph.output}
    unknown = sorted(
        set(fp16_convs)
        - {
            name
            for node in nodes
            if op_name(node) == "Conv"
            for name in (node.name, node.output[0])
        }
    )
    if unknown:
        raise HarnessError(f"no convolution {unknown[0]!r} in the model to keep in fp16")
    chains = _chains(nodes, constants, outputs, fp16_convs)
    if not chains:
        raise HarnessError("the model has no convolution the FP8 engine can run")
    return nodes, constants, outputs, chains


def _e4m3_residuals(nodes: list[onnx.NodeProto], chains: list[_Chain]) -> set[str]:
    """The residuals read in e4m3: those a fused convolution makes (its chain's last tensor)."""
    if not RESIDUAL_E4M3:
        return set()
    made = {str(nodes[chain.last].output[0]) for chain in chains}
    return {chain.residual for chain in chains if chain.residual in made}


def calibrated_tensors(model: onnx.ModelProto, fp16_convs: Collection[str] = ()) -> list[str]:
    """The activation tensors read in e4m3 (convolution inputs and residuals): calibration must
    give each one's maximum. `fp16_convs` as plan_fp8's."""
    nodes, _, _, chains = _graph_parts(model, fp16_convs)
    return sorted({nodes[chain.conv].input[0] for chain in chains} | _e4m3_residuals(nodes, chains))


def plan_fp8(
    model: onnx.ModelProto, amax: dict[str, float], fp16_convs: Collection[str] = ()
) -> Fp8Plan:
    """The graph rewritten for the FP8 engine. `amax`: each activation tensor's calibrated maximum
    absolute value (only those read in e4m3 are needed; a missing one is an error). `fp16_convs`:
    convolutions (by node or output name) that stay fp16 though they could run in FP8; a name the
    model has no Conv of is an error."""
    nodes, constants, outputs, chains = _graph_parts(model, fp16_convs)

    def final_tensor(chain: _Chain) -> str:
        return str(nodes[chain.last].output[0])

    e4m3_residuals = _e4m3_residuals(nodes, chains)
    pools = _pools(nodes, chains, outputs, constants)
    pool_outputs = {str(nodes[pool.pool].output[0]) for pool in pools}
    # Read in e4m3: by an FP8 convolution, or as a residual.
    e4m3_read = {nodes[chain.conv].input[0] for chain in chains} | e4m3_residuals
    chain_outputs = {final_tensor(chain): chain for chain in chains}
    # Which forms each chain's result needs: e4m3 when an FP8 convolution or a fused Add reads it
    # so, fp16 when any other node (or an fp16 residual, or the graph's output) does.
    fused = {i for chain in chains for i in chain.members} | {
        i for pool in pools for i in pool.members
    }
    fp16_readers: set[str] = set(outputs)
    for index, node in enumerate(nodes):
        if index not in fused:
            fp16_readers.update(node.input)
    fp16_readers.update(
        chain.residual
        for chain in chains
        if chain.residual is not None and chain.residual not in e4m3_residuals
    )

    def scale_of(tensor: str) -> float:
        if tensor not in amax:
            raise HarnessError(f"calibration has no range for tensor {tensor!r}")
        return scales.scale_for(float(amax[tensor]))

    shared = Counter(str(nodes[chain.conv].input[1]) for chain in chains)
    layers: list[Fp8ConvLayer] = []
    for chain in chains:
        conv = nodes[chain.conv]
        weights = constants[conv.input[1]].astype(np.float32)
        bias_name = conv.input[2] if len(conv.input) > 2 else ""
        bias = (
            constants[bias_name].astype(np.float32)
            if bias_name
            else np.zeros(weights.shape[0], dtype=np.float32)
        )
        weight_scales = scales.weight_scales(weights)
        output = final_tensor(chain)
        store8 = output in e4m3_read
        residual_scale = 0.0
        if chain.residual is not None and chain.residual in e4m3_residuals:
            residual_scale = scale_of(chain.residual)
        layers.append(
            Fp8ConvLayer(
                name=conv.output[0],
                input=conv.input[0],
                in_scale=1.0 / scale_of(conv.input[0]),
                input_fp16=conv.input[0] not in chain_outputs and conv.input[0] not in pool_outputs,
                weights=scales.quantize_weights(weights, weight_scales),
                alpha=(weight_scales * scale_of(conv.input[0])).astype(np.float32),
                bias=bias,
                stride=int(attributes(conv).get("strides", [1, 1])[0]),
                pads=_pads(conv),
                residual=chain.residual,
                residual_scale=residual_scale,
                relu=chain.relu is not None,
                output=output,
                store16=output in fp16_readers or not store8,
                store8=store8,
                out8_scale=1.0 / scale_of(output) if store8 else 0.0,
                weights_name=str(conv.input[1]) if shared[conv.input[1]] > 1 else "",
            )
        )
    pool_layers = []
    for pool in pools:
        node = nodes[pool.pool]
        attrs = attributes(node)
        pool_layers.append(
            Fp8PoolLayer(
                name=str(node.output[0]),
                input=str(nodes[pool.relu].input[0] if pool.relu is not None else node.input[0]),
                relu=pool.relu is not None,
                kernel=int(attrs["kernel_shape"][0]),
                stride=int(attrs.get("strides", [1, 1])[0]),
                pads=_pads(node),
                store16=str(node.output[0]) in fp16_readers,
                out8_scale=1.0 / scale_of(str(node.output[0])),
                bias=_moved_bias(nodes, pool, constants),
            )
        )
    padded = _input_padding(model)
    stems: list[tuple[_Pool, Fp8StemLayer]] = []
    kept: list[tuple[_Pool, Fp8PoolLayer]] = []
    for pool, pooled in zip(pools, pool_layers, strict=True):
        stem = _stem(model, nodes, constants, pool, pooled, padded)
        if stem is None:
            kept.append((pool, pooled))
        else:
            stems.append((pool, stem))
    rewritten = _rewrite(
        model,
        nodes,
        chains,
        layers,
        [pool for pool, _ in kept],
        [pooled for _, pooled in kept],
        stems,
    )
    if padded is not None:
        _pad_input_weights(rewritten, padded)
    return Fp8Plan(
        rewritten,
        tuple(layers),
        tuple(pooled for _, pooled in kept),
        padded,
        tuple(stem for _, stem in stems),
        tuple(sorted(fp16_convs)),
    )


def _graph_input(model: onnx.ModelProto) -> str | None:
    """The graph's one input (not an initializer), or None when it has several."""
    weights = {init.name for init in model.graph.initializer}
    inputs = [value.name for value in model.graph.input if value.name not in weights]
    return inputs[0] if len(inputs) == 1 else None


def _input_padding(model: onnx.ModelProto) -> int | None:
    """INPUT_CHANNELS when the graph's input is read only by convolutions (as their input, with
    constant weights) of fewer input channels: the engine's input pass then writes zero channels
    to match (ops.nhwc_half), and those convolutions get zero weights for them
    (_pad_input_weights; _stem for the one the stem's node absorbs). None otherwise. Decided on the
    graph as given: the stem's node is no Conv."""
    name = _graph_input(model)
    if name is None:
        return None
    weights = {init.name: init for init in model.graph.initializer}
    readers = [node for node in model.graph.node if name in node.input]
    if not readers or any(
        op_name(node) != "Conv" or node.input[0] != name or node.input[1] not in weights
        for node in readers
    ):
        return None
    arrays = [numpy_helper.to_array(weights[node.input[1]]) for node in readers]
    if any(array.ndim != 4 or array.shape[1] >= INPUT_CHANNELS for array in arrays):
        return None
    return INPUT_CHANNELS


def _padded_channels(array: npt.NDArray[Any], channels: int) -> npt.NDArray[Any]:
    """Convolution weights [K, C, R, S] with zero input channels past C, up to `channels`."""
    padded = np.zeros((array.shape[0], channels, *array.shape[2:]), dtype=array.dtype)
    padded[:, : array.shape[1]] = array
    return padded


def _pad_input_weights(model: onnx.ModelProto, channels: int) -> None:
    """Give the convolutions of the rewritten graph that read its input `channels` input channels
    (_input_padding chose them), in place."""
    graph = model.graph
    name = _graph_input(model)
    weights = {init.name: init for init in graph.initializer}
    for node in graph.node:
        if op_name(node) == "Conv" and node.input[0] == name:
            init = weights[node.input[1]]
            array = _padded_channels(numpy_helper.to_array(init), channels)
            init.CopyFrom(numpy_helper.from_array(array, init.name))


def _stem(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    constants: dict[str, npt.NDArray[Any]],
    pool: _Pool,
    pooled: Fp8PoolLayer,
    padded: int | None,
) -> Fp8StemLayer | None:
    """The fused max pool `pool` as a stem (Fp8StemLayer), when it is STEM_POOL storing e4m3 only
    and its bias came from a convolution of the kind stem_pool_kernel.py computes: of the graph's
    input with INPUT_CHANNELS channels (padded or not), stride STEM_STRIDE, one group, no dilation,
    symmetric padding (cuDNN's convolution runs it too, where that is faster), STEM_TAPS x STEM_TAPS
    filters and STEM_CHANNELS outputs. None otherwise: the pool stays an Fp8MaxPool."""
    if pool.bias_from is None or pooled.store16:
        return None
    if (pooled.kernel, pooled.stride) != STEM_POOL:
        return None
    if any(pad not in STEM_POOL_PADS for pad in pooled.pads):
        return None
    conv = nodes[pool.bias_from]
    attrs = attributes(conv)
    weights = constants.get(conv.input[1])
    pads = _pads(conv)
    if (
        conv.input[0] != _graph_input(model)
        or weights is None
        or weights.ndim != 4
        or [int(s) for s in attrs.get("strides", [1, 1])] != [STEM_STRIDE, STEM_STRIDE]
        or int(attrs.get("group", 1)) != 1
        or any(int(d) != 1 for d in attrs.get("dilations", [1, 1]))
        or attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID")
        or pads[0] != pads[2]
        or pads[1] != pads[3]
        or weights.shape[2] not in STEM_TAPS
        or weights.shape[3] not in STEM_TAPS
        or weights.shape[0] not in STEM_CHANNELS
        or (padded or weights.shape[1]) != INPUT_CHANNELS
    ):
        return None
    if padded is not None:
        weights = _padded_channels(weights, padded)
    return Fp8StemLayer(
        name=pooled.name,
        input=str(conv.input[0]),
        # Rounded as the fp16 graph held them (EngineModule casts its weights the same way).
        weights=np.ascontiguousarray(
            weights.astype(np.float16).astype(np.float32).transpose(0, 2, 3, 1)
        ),
        bias=pooled.bias,
        pads=pads,
        pool_pads=pooled.pads,
        out8_scale=pooled.out8_scale,
    )


def _moved_bias(
    nodes: list[onnx.NodeProto], pool: _Pool, constants: dict[str, npt.NDArray[Any]]
) -> npt.NDArray[np.float32]:
    """The bias the pool adds, rounded to fp16 as the fp16 graph held it; empty when none moved."""
    if pool.bias_from is None:
        return np.zeros(0, dtype=np.float32)
    bias = constants[nodes[pool.bias_from].input[2]]
    return bias.astype(np.float16).astype(np.float32)


def _rewrite(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    chains: list[_Chain],
    layers: list[Fp8ConvLayer],
    pools: list[_Pool],
    pool_layers: list[Fp8PoolLayer],
    stems: list[tuple[_Pool, Fp8StemLayer]],
) -> onnx.ModelProto:
    """The model with each chain replaced by one Fp8Conv node, at its last node's place (where the
    residual exists): inputs (the input's e4m3 or fp16 form, the residual's e4m3 or fp16 form or
    ""), outputs (the fp16 result or "", the e4m3 result or ""), attribute `layer` (the index into
    the plan's layers). Each fused max pool likewise becomes one Fp8MaxPool node at the pool's
    place: input (the fp16 tensor before its Relu), outputs (fp16 or "", e4m3), attribute `layer`
    (the index into the plan's pools); and each stem one Fp8StemPool node at its pool's place, its
    Conv and Relu absorbed: input (the graph's input), output (e4m3), attribute `layer` (the index
    into the plan's stems)."""
    by_last = {chain.last: position for position, chain in enumerate(chains)}
    by_pool = {pool.pool: position for position, pool in enumerate(pools)}
    by_stem = {pool.pool: position for position, (pool, _) in enumerate(stems)}
    absorbed = {i for chain in chains for i in chain.members}
    absorbed |= {i for pool in pools for i in pool.members}
    absorbed |= {i for pool, _ in stems for i in pool.members}
    absorbed |= {pool.bias_from for pool, _ in stems if pool.bias_from is not None}  # the Conv
    unbiased = {pool.bias_from for pool in pools if pool.bias_from is not None}
    new_nodes = []
    for index, node in enumerate(nodes):
        if index in unbiased:  # its bias moved into the pool after it
            without = onnx.NodeProto()
            without.CopyFrom(node)
            del without.input[2:]
            new_nodes.append(without)
        elif index in by_pool:
            pooled = pool_layers[by_pool[index]]
            new_nodes.append(
                helper.make_node(
                    "Fp8MaxPool",
                    [pooled.input],
                    [pooled.name if pooled.store16 else "", pooled.name + FP8_SUFFIX],
                    domain=FP8_DOMAIN,
                    name=f"{pooled.name}/fp8",
                    layer=by_pool[index],
                )
            )
        elif index in by_stem:
            stem = stems[by_stem[index]][1]
            new_nodes.append(
                helper.make_node(
                    "Fp8StemPool",
                    [stem.input],
                    [stem.name + FP8_SUFFIX],
                    domain=FP8_DOMAIN,
                    name=f"{stem.name}/fp8",
                    layer=by_stem[index],
                )
            )
        elif index in by_last:
            layer = layers[by_last[index]]
            new_nodes.append(
                helper.make_node(
                    "Fp8Conv",
                    [
                        layer.input if layer.input_fp16 else layer.input + FP8_SUFFIX,
                        _residual_input(layer),
                    ],
                    [
                        layer.output if layer.store16 else "",
                        layer.output + FP8_SUFFIX if layer.store8 else "",
                    ],
                    domain=FP8_DOMAIN,
                    name=f"{layer.name}/fp8",
                    layer=by_last[index],
                )
            )
        elif index not in absorbed:
            new_nodes.append(node)
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    del rewritten.graph.node[:]
    rewritten.graph.node.extend(new_nodes)
    used = {name for node in new_nodes for name in node.input}
    kept = [init for init in rewritten.graph.initializer if init.name in used]
    del rewritten.graph.initializer[:]
    rewritten.graph.initializer.extend(kept)
    if all(entry.domain != FP8_DOMAIN for entry in rewritten.opset_import):
        rewritten.opset_import.append(helper.make_opsetid(FP8_DOMAIN, 1))
    return rewritten


def _residual_input(layer: Fp8ConvLayer) -> str:
    if layer.residual is None:
        return ""
    return layer.residual + FP8_SUFFIX if layer.residual_scale else layer.residual
