"""DLRM-v2's dense part in torch, on one device: the bottom MLP over the dense features, the three
low-rank DCNv2 cross layers over [bottom output, pooled rows], the top MLP, the click probability.
What the torch runner computes after the pooled lookups (torch_runner.py), and what the CPU tests
run on the small stand-in's held-out pairs.

Precisions (torch_plan.TORCH_PRECISIONS, and fp32 for the tests' reference):
- `fp16`: every weight and activation in fp16 (torch.addmm).
- `fp8`: the Linear products in FP8 e4m3 with one scale per output channel (engines/fp8_linear.py,
  the GPT-J and Llama engines' layers): the bottom MLP's layers after the first, both products of
  each cross layer (V, then W), the top MLP's layers before the last; each product's input
  quantized per row (fp8_rows.py: Triton kernels where Triton runs, torch elsewhere, the same
  numbers) and multiplied by torch._scaled_mm where this torch and GPU have it (elsewhere the
  same arithmetic in float32: the CPU's figures). A product's bias and ReLU are taken in the pass
  that quantizes the next product's input, and each cross layer's update writes x' in fp16 and
  in e4m3 at once. The first bottom layer (13 inputs) and the last top layer (one output) stay
  fp16: _scaled_mm needs both widths in multiples of 16, and they are a sliver of the work. The
  activations between products are fp16; the sigmoid is taken in fp32.
The cross layers' update x' = x + x0 * (W (V x) + b), `cross` (torch_plan.TorchPlan.cross):
- `torch`: W's product with its bias by addmm (fp16 out), then torch.addcmul.
- `kernel` (fp16 only): W's product, its bias and the update in one Triton kernel
  (cross_update.py), x' the only [pairs, width] tensor written; on a CUDA device with Triton, or
  on the CPU under TRITON_INTERPRET=1 (the tests).
A layer whose widths _scaled_mm cannot take (the small stand-in's 216-wide cross layers on a GPU)
computes its product in float32 from the same e4m3 operands: the same numbers, no speed-up.

Imports torch: GPU hosts, and the development environment's CPU tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import Weights
from mlperf_harness.benchmarks.dlrm_v2.fp8_rows import RowQuantizer
from mlperf_harness.benchmarks.dlrm_v2.topology import CROSS_LAYERS, Widths
from mlperf_harness.benchmarks.dlrm_v2.torch_plan import DEFAULT_CROSS, check_cross
from mlperf_harness.config.fields import DLRM_CROSS_WAYS
from mlperf_harness.engines.fp8_linear import Linear, fp8_layers, quantize
from mlperf_harness.engines.torch_aot.torch_host import import_torch, triton_runs_on
from mlperf_harness.errors import HarnessError

FP8 = "fp8"
COMPUTE_DTYPES = {"fp32": "float32", "fp16": "float16", FP8: "float16"}
SCALED_MM_MULTIPLE = 16  # _scaled_mm's operands: both widths multiples of this


def fp8_layer_names(widths: Widths) -> tuple[str, ...]:
    """The layers whose weights are FP8 in `fp8`: all but the first bottom and last top layer."""
    bottom = tuple(f"bottom/{i}" for i in range(1, len(widths.bottom)))
    cross = tuple(f"cross/{layer}/{part}" for layer in range(CROSS_LAYERS) for part in "vw")
    top = tuple(f"top/{i}" for i in range(len(widths.top)))
    return bottom + cross + top


class DenseLayers:
    """The dense part's layers on `device` in `precision`, from the [in, out] numpy weights; the
    cross layers' update done as `cross` says."""

    def __init__(
        self,
        weights: Weights,
        widths: Widths,
        device: Any,
        precision: str,
        engine: str = "dlrm-v2",
        cross: str = DEFAULT_CROSS,
    ) -> None:
        torch = import_torch()
        if precision not in COMPUTE_DTYPES:
            raise HarnessError(
                f"DLRM-v2's dense part runs {', '.join(COMPUTE_DTYPES)}, not {precision}"
            )
        if cross not in DLRM_CROSS_WAYS:
            raise HarnessError(
                f"DLRM-v2's cross layers run {', '.join(DLRM_CROSS_WAYS)}, not {cross}"
            )
        check_cross(cross, precision)
        if cross == "kernel":
            check_kernel_device(torch.device(device), engine)
        self.cross_way = cross
        self.precision = precision
        # fp8: how each product's input is quantized (Triton kernels or torch)
        self.row_quantizer = RowQuantizer(torch, torch.device(device)) if precision == FP8 else None
        self.dtype = getattr(torch, COMPUTE_DTYPES[precision])
        self.widths = widths
        make_fp8 = fp8_layers(torch, device, self.dtype, engine) if precision == FP8 else None
        quantized = set(fp8_layer_names(widths)) if make_fp8 is not None else set()

        def tensor(name: str) -> Any:
            return torch.from_numpy(np.ascontiguousarray(weights[name])).to(
                device=device, dtype=torch.float32
            )

        def layer(name: str, matrix: str, bias: str | None) -> Linear:
            weight = tensor(f"{name}/{matrix}").t().contiguous()  # [out, in], as Linear holds it
            b = None if bias is None else tensor(f"{name}/{bias}").to(self.dtype)
            layer_name = name if matrix == "weight" else f"{name}/{matrix}"  # fp8_layer_names'
            if make_fp8 is None or layer_name not in quantized:
                return Linear(weight=weight.to(self.dtype), bias=b)
            out, inputs = weight.shape
            if out % SCALED_MM_MULTIPLE or inputs % SCALED_MM_MULTIPLE:
                return quantize(torch, weight, False, b)  # FP8 weights, dequantized products
            return make_fp8(weight, b)

        self.bottom = [layer(f"bottom/{i}", "weight", "bias") for i in range(len(widths.bottom))]
        # A cross layer: c = W (V x) + b; V has no bias, W's bias is the layer's.
        self.cross = [
            (layer(f"cross/{i}", "v", None), layer(f"cross/{i}", "w", "bias"))
            for i in range(CROSS_LAYERS)
        ]
        self.top = [layer(f"top/{i}", "weight", "bias") for i in range(len(widths.top) + 1)]

    def layers(self) -> dict[str, Linear]:
        """Every layer by its weights' name (cross layers' two products as cross/{l}/v and w)."""
        named = {f"bottom/{i}": linear for i, linear in enumerate(self.bottom)}
        for i, (v, w) in enumerate(self.cross):
            named[f"cross/{i}/v"], named[f"cross/{i}/w"] = v, w
        named.update({f"top/{i}": linear for i, linear in enumerate(self.top)})
        return named

    def probability(self, dense: Any, pooled: Any) -> Any:
        """float32 [pairs]: each pair's click probability. `dense`: [pairs, 13] float (the
        preprocessed dense features), `pooled`: [pairs, 26 * width] (the summed bags)."""
        x0 = self.interaction(pooled.shape[0], pooled.device)
        self.pooled_columns(x0).copy_(pooled)
        return self.probability_from(dense, x0)

    def interaction(self, pairs: int, device: Any) -> Any:
        """An empty [pairs, 27 * width] cross-network input in the compute dtype: the bottom MLP's
        output first, then the pooled rows (pooled_columns), which the lookups can write in place
        so that no concatenation copies them (the runner's pooling kernel does)."""
        torch = import_torch()

        return torch.empty((pairs, self.widths.interaction), dtype=self.dtype, device=device)

    def pooled_columns(self, x0: Any) -> Any:
        """The view of `interaction`'s tensor where the pooled rows go."""
        return x0[:, self.widths.embedding :]

    def probability_from(self, dense: Any, x0: Any) -> Any:
        """probability's, from an `interaction` tensor whose pooled columns hold the summed bags;
        the bottom MLP's output is written into its first columns."""
        torch = import_torch()

        rows = self.row_quantizer
        x0[:, : self.widths.embedding].copy_(
            self._mlp(torch, rows, self.bottom, dense.to(self.dtype))
        )
        if rows is not None:
            h = self._mlp(torch, rows, self.top[:-1], None, self._fp8_cross(torch, rows, x0))
        else:
            h = self._mlp(torch, None, self.top[:-1], self._cross(torch, x0))
        logit = self.top[-1](torch, h)
        return torch.sigmoid(logit.to(torch.float32)).view(-1)

    def _cross(self, torch: Any, x0: Any) -> Any:
        """The cross network's output in fp16 or fp32, its updates as `cross_way` says."""
        x = x0
        if self.cross_way == "kernel":
            from mlperf_harness.benchmarks.dlrm_v2.cross_update import fused_update

            for v, w in self.cross:
                x = fused_update(v(torch, x), w.weight, w.bias, x, x0)
        else:
            for v, w in self.cross:
                x = torch.addcmul(x, x0, w(torch, v(torch, x)))
        return x

    def _fp8_cross(self, torch: Any, rows: RowQuantizer, x0: Any) -> tuple[Any, Any]:
        """The cross network's output in `fp8`, quantized row-wise for the top MLP: every FP8
        product reads its input quantized by `rows`, each update writes x' in both forms."""
        x, quantized = x0, rows.quantized(x0)
        for v, w in self.cross:
            y = v.product(torch, *quantized, self.dtype)  # V has no bias
            c = w.product(torch, *rows.quantized(y), self.dtype, with_bias=False)
            x, x8, scale = rows.update_quantized(x, x0, c, w.bias)
            quantized = (x8, scale)
        return quantized

    def _mlp(
        self, torch: Any, rows: RowQuantizer | None, layers: Any, x: Any, quantized: Any = None
    ) -> Any:
        """`layers`, each followed by a ReLU, from `x` (or the first one's input already
        quantized); their last output, activated. An FP8 layer (`fp8` only: `rows` is then set)
        leaves its product's bias and ReLU to the pass that quantizes the next layer's input."""
        pending: tuple[Any] | None = None  # x is an FP8 product: its bias (or None), no ReLU yet
        for linear in layers:
            if linear.weight8 is None:
                x = x if pending is None else _activated(torch, x, pending[0])
                x, pending = relu_product(torch, linear, x), None
                continue
            assert rows is not None  # FP8 layers exist only in fp8
            if quantized is None:
                bias = None if pending is None else pending[0]
                quantized = rows.quantized(x, bias, relu=pending is not None)
            x = linear.product(torch, *quantized, self.dtype, with_bias=False)
            quantized, pending = None, (linear.bias,)
        return x if pending is None else _activated(torch, x, pending[0])


def _activated(torch: Any, x: Any, bias: Any) -> Any:
    """ReLU(x + bias) of a product left without its bias (none where bias is None)."""
    return torch.relu_(x if bias is None else x + bias)


def relu_product(torch: Any, linear: Linear, x: Any) -> Any:
    """ReLU(linear(x)). A plain product with a bias (not FP8, not recording its input's maximum)
    takes the ReLU in the product's epilogue (torch._addmm_activation: cuBLASLt's bias and ReLU
    epilogue on a GPU), which saves a pass over its output; the rest a ReLU after the product."""
    if linear.weight8 is None and linear.bias is not None and linear.amax is None and x.dim() == 2:
        return torch._addmm_activation(linear.bias, x, linear.weight.t())
    return torch.relu_(linear(torch, x))


def check_kernel_device(device: Any, engine: str) -> None:
    """The cross kernel runs where Triton compiles for the device (CUDA) or interprets it (the CPU
    under TRITON_INTERPRET=1): anywhere else one line says so."""
    if not triton_runs_on(device):
        raise HarnessError(
            f"{engine}: --cross kernel runs on a CUDA GPU (or the CPU under TRITON_INTERPRET=1), "
            f"not on {device.type}"
        )
    try:
        import triton  # type: ignore[import-not-found]  # noqa: F401  # pants: no-infer-dep
    except ImportError as error:
        raise HarnessError(
            f"{engine}: --cross kernel needs triton, which is not installed"
        ) from error
