"""Convolutions with their bias and ReLU in cuDNN's epilogue against Inductor's way, on a model's
own convolutions: the A/B a GPU call runs before an engine is built either way.

Inductor keeps cuDNN's convolution without its bias and fuses the bias, the residual Add and the
ReLU into a pointwise pass of its own over the convolution's output (RetinaNet's profile: about 2
ms of a batch of 8's 12 on an H200, docs/retinanet.md). cuDNN can apply them in the convolution's
epilogue, as TensorRT does (`torch.cudnn_convolution_relu`, `torch.cudnn_convolution_add_relu`).
For each distinct convolution of the model (its input shape at `--batch`, weights, stride,
padding, groups, and what follows it: ReLU, Add then ReLU, or nothing), in fp16 channels-last:

- `inductor`: the convolution with its bias and epilogue through torch.compile, as the engine's
  package computes it;
- `cudnn fused`: the fused cuDNN operator, through `mlperf_conv::conv2d_relu`
  (torch_aot/conv_epilogue_op.py), as the FP8 engine calls it.

Convolutions followed by neither are counted and not timed (nothing to fuse). Each way's outputs
are compared with fp32 first (equal within fp16 rounding, or the way is not timed), then ten calls
are captured in one CUDA graph and timed, with cuDNN's algorithm chosen by its heuristics (as the
engines run) and then by timing (`cudnn.benchmark`: "<way> benchmark"). Prints a row a distinct
convolution and the totals a batch, weighted by how often each occurs:

  python -m mlperf_harness.engines.conv_epilogue_ab --model_path model.onnx [--batch 8] [--out F]

The shapes come from the ONNX graph alone (`conv_cases`, no torch); the timing imports torch: GPU
hosts only.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.engines.gpu_timing import captured_ms
from mlperf_harness.engines.torch_aot import onnx_to_torch
from mlperf_harness.errors import HarnessError

CALLS_PER_GRAPH = 10  # a small convolution's launch would otherwise be most of its time
GRAPH_REPLAYS = 20
RELU, ADD_RELU, NONE = "relu", "add_relu", "none"
WAYS = ("inductor", "cudnn fused")
# cuDNN picks each convolution's algorithm by its heuristics unless torch.backends.cudnn.benchmark
# is on (the engines run with it off). The first A/B, with it on, had the fused way 1.31x faster,
# and the engine built so ran slower (docs/retinanet.md): each way is timed in both modes.
# (a way's name suffix, cudnn.benchmark, what the summary calls the mode)
MODES = (("", False, "cuDNN's heuristics"), (" benchmark", True, "cudnn.benchmark"))
TIMED = tuple(f"{way}{suffix}" for suffix, _, _ in MODES for way in WAYS)
TOLERANCE = 2e-2  # fp16: both ways round the same sums in other orders


@dataclasses.dataclass(frozen=True)
class ConvCase:
    """One distinct convolution: NCHW input shape, KCRS weights shape, its geometry and what the
    graph does to its output next."""

    input_shape: tuple[int, int, int, int]
    weights_shape: tuple[int, int, int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    epilogue: str

    def label(self) -> str:
        _, c, h, w = self.input_shape
        k, _, r, s = self.weights_shape
        grouped = f" g{self.groups}" if self.groups > 1 else ""
        return f"{c}->{k} {r}x{s}/{self.stride[0]}{grouped} @{h}x{w} +{self.epilogue}"


def _epilogue(node: onnx.NodeProto, readers: dict[str, list[onnx.NodeProto]]) -> str:
    """RELU where the convolution's only reader is a Relu, ADD_RELU where it is an Add whose only
    reader is a Relu, else NONE."""
    after = readers.get(node.output[0], [])
    if len(after) != 1:
        return NONE
    if after[0].op_type == "Relu":
        return RELU
    if after[0].op_type == "Add":
        then = readers.get(after[0].output[0], [])
        if len(then) == 1 and then[0].op_type == "Relu":
            return ADD_RELU
    return NONE


def conv_cases(model: onnx.ModelProto, batch: int) -> Counter[ConvCase]:
    """The model's 2-D convolutions with constant weights, each distinct one counted, at `batch`
    (the input's first dimension set to it; every other one must be fixed)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    inputs = onnx_to_torch.graph_inputs(model)
    if len(inputs) != 1:
        raise HarnessError(f"the A/B takes models of one input, this one has {len(inputs)}")
    shape = onnx_to_torch.input_shape(inputs[0], batch)
    for dim, size in zip(inputs[0].type.tensor_type.shape.dim, shape, strict=True):
        dim.Clear()
        dim.dim_value = size
    graph = onnx.shape_inference.infer_shapes(model).graph
    shapes = {
        value.name: tuple(dim.dim_value for dim in value.type.tensor_type.shape.dim)
        for value in [*graph.input, *graph.value_info, *graph.output]
    }
    weights = {init.name: tuple(init.dims) for init in graph.initializer}
    readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            readers[name].append(node)
    cases: Counter[ConvCase] = Counter()
    for node in graph.node:
        if node.op_type != "Conv" or node.domain not in onnx_to_torch.DEFAULT_DOMAINS:
            continue
        kernel = weights.get(node.input[1], ())
        data = shapes.get(node.input[0], ())
        if len(kernel) != 4 or len(data) != 4 or not all(data):
            continue  # not 2-D, weights computed, or a shape inference could not give
        attrs = onnx_to_torch.attributes(node)
        pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
        if pads[:2] != pads[2:]:
            continue  # asymmetric padding: neither torch way takes it
        cases[
            ConvCase(
                input_shape=tuple(int(d) for d in data),  # type: ignore[arg-type]
                weights_shape=tuple(int(d) for d in kernel),  # type: ignore[arg-type]
                stride=tuple(int(s) for s in attrs.get("strides", [1, 1])),  # type: ignore[arg-type]
                padding=(pads[0], pads[1]),
                dilation=tuple(int(d) for d in attrs.get("dilations", [1, 1])),  # type: ignore[arg-type]
                groups=int(attrs.get("group", 1)),
                epilogue=_epilogue(node, readers),
            )
        ] += 1
    if not cases:
        raise HarnessError("the model has no 2-D convolution with constant weights to time")
    return cases


def _geometry(case: ConvCase) -> tuple[list[int], list[int], list[int], int]:
    """stride, padding, dilation, groups: as both conv2d and cuDNN's operators take them."""
    return list(case.stride), list(case.padding), list(case.dilation), case.groups


def _ways(torch: Any, case: ConvCase) -> dict[str, Callable[..., Any]]:
    """Each way as a function of (x, w, b, z): z is the residual (ADD_RELU only)."""
    functional = torch.nn.functional
    geometry = _geometry(case)

    def reference(x: Any, w: Any, b: Any, z: Any) -> Any:
        y = functional.conv2d(x, w, b, *geometry)
        return torch.relu(y + z if case.epilogue == ADD_RELU else y)

    from mlperf_harness.engines.torch_aot import conv_epilogue_op  # registers the operator

    def fused(x: Any, w: Any, b: Any, z: Any) -> Any:
        residual = z if case.epilogue == ADD_RELU else None
        return conv_epilogue_op.conv2d_relu(x, w, b, residual, *geometry)

    # Every case compiles the same code object with other closure values: past dynamo's recompile
    # limit it would run eager without saying so. Each case is timed before the next is compiled.
    torch._dynamo.reset()
    return {"inductor": torch.compile(reference, dynamic=False), "cudnn fused": fused}


def time_case(torch: Any, case: ConvCase, seed: int) -> dict[str, Any]:
    """Each way's ms (or the line saying why it was not timed) and its largest difference from
    eager fp32 arithmetic on the same fp16 values, relative to the output's largest magnitude.
    A convolution with no epilogue is not timed (nothing to fuse)."""
    row: dict[str, Any] = {"case": case.label(), "ms": {}, "error": {}, "not_timed": {}}
    if case.epilogue == NONE:
        return row
    generator = torch.Generator(device="cuda").manual_seed(seed)
    n, c, h, w = case.input_shape
    k, per_group, r, s = case.weights_shape

    def tensor(*shape: int, scale: float = 1.0) -> Any:
        values = (torch.randn(shape, device="cuda", generator=generator) * scale).half()
        return values.contiguous(memory_format=torch.channels_last) if len(shape) == 4 else values

    x = tensor(n, c, h, w)
    weights = tensor(k, per_group, r, s, scale=(per_group * r * s) ** -0.5)
    bias = tensor(k, scale=0.5)
    reference = torch.nn.functional.conv2d(
        x.float(), weights.float(), bias.float(), *_geometry(case)
    )
    residual = tensor(*reference.shape) if case.epilogue == ADD_RELU else None
    if residual is not None:
        reference = reference + residual.float()
    reference = torch.relu(reference)
    scale = float(reference.abs().max()) or 1.0
    for name, way in _ways(torch, case).items():
        try:
            with torch.no_grad():
                out = way(x, weights, bias, residual)
            error = float((out.float() - reference).abs().max()) / scale
        except RuntimeError as failure:  # cuDNN may have no fused engine for a configuration
            row["not_timed"][name] = str(failure).splitlines()[0][:160]
            continue
        row["error"][name] = error
        if error > TOLERANCE:
            row["not_timed"][name] = f"differs from fp32 by {error:.3g} of its largest value"
            continue

        def run(way: Callable[..., Any] = way) -> Any:
            return way(x, weights, bias, residual)

        for suffix, benchmark, _ in MODES:
            torch.backends.cudnn.benchmark = benchmark
            row["ms"][f"{name}{suffix}"] = captured_ms(torch, run, GRAPH_REPLAYS, CALLS_PER_GRAPH)
        torch.backends.cudnn.benchmark = False
    return row


def measure(model_path: Path, batch: int) -> dict[str, Any]:
    from mlperf_harness.engines.torch_aot.torch_host import import_torch

    cases = conv_cases(onnx_to_torch.load_model(model_path), batch)
    torch = import_torch()
    if not torch.cuda.is_available():
        raise HarnessError("the convolution epilogue A/B times cuDNN: it needs a CUDA GPU")
    rows: list[dict[str, Any]] = []
    ordered = sorted(cases.items(), key=lambda item: item[0].label())
    for seed, (case, count) in enumerate(ordered):
        row = time_case(torch, case, seed)
        row["count"] = count
        rows.append(row)
        print(format_row(row), flush=True)
    return {
        "model": str(model_path),
        "batch": batch,
        "gpu": str(torch.cuda.get_device_name()),
        "torch": str(torch.__version__),
        "rows": rows,
    }


def format_row(row: dict[str, Any]) -> str:
    times = "  ".join(
        f"{name} {row['ms'][name]:.3f}" if name in row["ms"] else f"{name} -"
        for name in TIMED
        if name in row["ms"] or name in row["not_timed"]
    )
    skipped = "; ".join(f"{name}: {why}" for name, why in row["not_timed"].items())
    return f"{row['count']:>3} x {row['case']:<40} {times}" + (f"  ({skipped})" if skipped else "")


def summary(record: dict[str, Any]) -> str:
    """Totals a batch over the convolutions both ways timed, weighted by their counts."""
    both = [row for row in record["rows"] if all(name in row["ms"] for name in TIMED)]
    totals = {name: sum(row["ms"][name] * row["count"] for row in both) for name in TIMED}
    convs = sum(row["count"] for row in both)
    alone = sum(row["count"] for row in record["rows"]) - convs
    modes = []
    for suffix, _, label in MODES:
        inductor, fused = totals[f"inductor{suffix}"], totals[f"cudnn fused{suffix}"]
        ratio = f"{inductor / fused:.3f}x" if fused else "-"
        modes.append(f"{label}: inductor {inductor:.3f} ms, cudnn fused {fused:.3f} ms ({ratio})")
    return (
        f"conv epilogue A/B, batch {record['batch']}: {convs} convolutions timed both ways; "
        f"{'; '.join(modes)}; {alone} not (no epilogue, or a way failed)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="conv_epilogue_ab", description=__doc__.splitlines()[0])
    parser.add_argument("--model_path", type=Path, required=True)
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--out", type=Path, default=None, help="write the record here")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.model_path, args.batch)
        print(summary(record))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("conv_epilogue_ab", run)


if __name__ == "__main__":
    raise SystemExit(main())
