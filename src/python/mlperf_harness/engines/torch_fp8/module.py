"""The FP8 engine as a torch module: the planned graph (plan.py) run by the ONNX interpreter in fp16,
its Fp8Conv, Fp8MaxPool and Fp8StemPool nodes by the operators of ops.py, and the convolutions it
keeps in fp16 (RetinaNet's grouped 3x3s) with their bias and ReLU in cuDNN's epilogue
(torch_aot/conv_epilogue.py): run eagerly, as the exported program runs, conv2d and relu cost two
passes over each output beside the convolution.

Imports torch: only the engine builder (and development checks) import this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_aot import conv_epilogue_op
from mlperf_harness.engines.torch_aot.conv_epilogue import fuse_conv_epilogues
from mlperf_harness.engines.torch_aot.torch_module import EngineModule, Handler, OnnxGraphModule
from mlperf_harness.engines.torch_fp8 import ops
from mlperf_harness.engines.torch_fp8.plan import FP8_CONV, FP8_MAX_POOL, FP8_STEM_POOL, Fp8Plan
from mlperf_harness.errors import HarnessError


class Fp8Layers(torch.nn.Module):  # type: ignore[misc]
    """The e4m3 weights and fp32 per-channel factors of every Fp8Conv, the fp16 weights of every
    stem, and the handlers that run the FP8 nodes (the interpreter calls them with a node's inputs
    and attributes). `stem_configs`: how each stem runs (by stem index); none given, every stem
    runs unfused (ops.UNFUSED_STEM)."""

    def __init__(
        self,
        plan: Fp8Plan,
        configs: Sequence[ops.KernelConfig],
        stem_configs: Sequence[ops.StemConfig] | None = None,
    ) -> None:
        super().__init__()
        if len(configs) != len(plan.layers):
            raise HarnessError(
                f"{len(configs)} kernel configurations for {len(plan.layers)} layers"
            )
        if stem_configs is None:
            stem_configs = [ops.UNFUSED_STEM] * len(plan.stems)
        if len(stem_configs) != len(plan.stems):
            raise HarnessError(
                f"{len(stem_configs)} stem configurations for {len(plan.stems)} stems"
            )
        self.plan_layers = plan.layers
        self.plan_pools = plan.pools
        self.plan_stems = plan.stems
        self.configs = [config.as_list() for config in configs]
        self.stem_configs = [config.as_list() for config in stem_configs]
        # Each layer's and each stem's input shape (N, C, H, W) by index, as the last forward saw
        # them: the builder tunes the kernels on these.
        self.input_shapes: dict[int, tuple[int, ...]] = {}
        self.stem_input_shapes: dict[int, tuple[int, ...]] = {}
        # The layer whose buffer holds each layer's e4m3 weights: the first of those sharing them
        # (plan.Fp8ConvLayer.weights_name), so a head used at five pyramid levels is held once.
        first: dict[str, int] = {}
        self.weight_slots = [
            first.setdefault(layer.weights_name, index) if layer.weights_name else index
            for index, layer in enumerate(plan.layers)
        ]
        for index, layer in enumerate(plan.layers):
            if self.weight_slots[index] == index:
                weights = ops.as_bits(torch.from_numpy(layer.weights))
                self.register_buffer(f"w{index}", weights.contiguous())
            self.register_buffer(f"alpha{index}", torch.from_numpy(layer.alpha.copy()))
            self.register_buffer(f"bias{index}", torch.from_numpy(layer.bias.copy()))
        for index, pool in enumerate(plan.pools):
            self.register_buffer(f"pool_bias{index}", torch.from_numpy(pool.bias.copy()))
        for index, stem in enumerate(plan.stems):  # fp16 values: exact in fp16
            self.register_buffer(f"stem_w{index}", torch.from_numpy(stem.weights).half())
            self.register_buffer(f"stem_bias{index}", torch.from_numpy(stem.bias.copy()))

    def run_conv(self, ctx: Any, inputs: list[Any], attrs: dict[str, Any]) -> list[Any]:
        index = int(attrs["layer"])
        layer = self.plan_layers[index]
        residual = inputs[1] if len(inputs) > 1 else None
        self.input_shapes[index] = tuple(int(d) for d in inputs[0].shape)
        y16, y8 = ops.conv(
            inputs[0],
            getattr(self, f"w{self.weight_slots[index]}"),
            getattr(self, f"alpha{index}"),
            getattr(self, f"bias{index}"),
            residual,
            layer.stride,
            list(layer.pads),
            layer.relu,
            layer.in_scale,
            layer.residual_scale,
            layer.out8_scale,
            layer.store16,
            layer.store8,
            self.configs[index],
        )
        return [y16 if layer.store16 else None, y8 if layer.store8 else None]

    def run_max_pool(self, ctx: Any, inputs: list[Any], attrs: dict[str, Any]) -> list[Any]:
        index = int(attrs["layer"])
        pool = self.plan_pools[index]
        y16, y8 = ops.max_pool(
            inputs[0],
            pool.kernel,
            pool.stride,
            list(pool.pads),
            pool.relu,
            pool.out8_scale,
            pool.store16,
            getattr(self, f"pool_bias{index}"),
        )
        return [y16 if pool.store16 else None, y8]

    def run_stem_pool(self, ctx: Any, inputs: list[Any], attrs: dict[str, Any]) -> list[Any]:
        index = int(attrs["layer"])
        stem = self.plan_stems[index]
        self.stem_input_shapes[index] = tuple(int(d) for d in inputs[0].shape)
        y8 = ops.run_stem(
            inputs[0],
            getattr(self, f"stem_w{index}"),
            getattr(self, f"stem_bias{index}"),
            list(stem.pads),
            list(stem.pool_pads),
            stem.out8_scale,
            ops.StemConfig.from_list(self.stem_configs[index]),
        )
        return [y8]


class Fp8EngineModule(torch.nn.Module):  # type: ignore[misc]
    """fp32 NCHW input in (cast to fp16 channels-last and padded to the stem's input channels by
    one kernel of ours, plan.INPUT_CHANNELS; EngineModule's own cast and layout change then have
    nothing to do), the planned graph, float outputs in fp32."""

    def __init__(
        self,
        plan: Fp8Plan,
        configs: Sequence[ops.KernelConfig],
        output_names: Sequence[str] | None = None,
        stem_configs: Sequence[ops.StemConfig] | None = None,
    ) -> None:
        super().__init__()
        self.layers = Fp8Layers(plan, configs, stem_configs)
        handlers: dict[str, Handler] = {
            FP8_CONV: self.layers.run_conv,
            FP8_MAX_POOL: self.layers.run_max_pool,
            FP8_STEM_POOL: self.layers.run_stem_pool,
            **conv_epilogue_op.HANDLERS,
        }
        model, _ = fuse_conv_epilogues(plan.model)  # the fp16 convolutions' epilogues
        graph = OnnxGraphModule(model, output_names, extra_handlers=handlers)
        self.output_names = graph.output_names
        self.input_channels = plan.input_channels
        self.engine = EngineModule(graph, torch.float16, channels_last=True)

    def body_input(self, x: Any) -> Any:
        """The input pass: what `self.engine`, the part exported (exported.py), takes."""
        return ops.nhwc_half(x, self.input_channels or int(x.shape[1]))

    def forward(self, x: Any) -> tuple[Any, ...]:
        return self.engine(self.body_input(x))  # type: ignore[no-any-return]
