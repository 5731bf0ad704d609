"""On a GPU host: the FP8 kernel against its CPU reference on every distinct ResNet-50 layer shape
(and the stem in every form, each also timed at batch 256), a built FP8 engine against the fp16
engine and ONNX Runtime fp32 on the same images, and where an engine's time goes (its GPU kernels,
grouped by name, under torch's profiler).

    python3 -m mlperf_harness.engines.torch_fp8.device_check kernels
    python3 -m mlperf_harness.engines.torch_fp8.device_check engines --fp8 E8/model.pt2 \
        --fp16 E16/model.pt2 --model M.onnx --preprocessed_dir D
    python3 -m mlperf_harness.engines.torch_fp8.device_check profile E/model_exported.pt2

Prints tables; exits non-zero when a check fails: the fp16 output off by more than fp16 rounding, or
more than 0.1% of e4m3 outputs off by more than one e4m3 step of the larger of the two values (the
GPU's accumulation order differs from the CPU's, so values on a rounding boundary may land on either
side; a sum that cancels to near zero may differ by several steps of its tiny magnitude).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.backends.torch_cuda.runner import load_package
from mlperf_harness.engines.torch_aot.metadata import io_path
from mlperf_harness.engines.torch_aot.torch_host import import_torch

# ResNet-50 v1.5's distinct FP8 layer forms:
# (C, H, K, kernel, stride, pads, residual (None, "fp16", "e4m3"), relu, store fp16, store e4m3,
#  fp16 input)
LAYER_FORMS = (
    (
        64,
        56,
        64,
        1,
        1,
        0,
        None,
        True,
        False,
        True,
        True,
    ),  # stage 1 reduce, quantizing fp16 as it loads
    (64, 56, 64, 3, 1, 1, None, True, False, True, False),  # stage 1 3x3
    (64, 56, 256, 1, 1, 0, "e4m3", True, False, True, False),  # stage 1 expand + residual
    (64, 56, 256, 1, 1, 0, "fp16", True, True, True, False),  # the same, fp16 residual stream
    (64, 56, 256, 1, 1, 0, None, False, False, True, False),  # stage 1 projection shortcut
    (256, 56, 128, 1, 1, 0, None, True, False, True, False),  # stage 2 reduce
    (128, 56, 128, 3, 2, 1, None, True, False, True, False),  # stage 2 strided 3x3
    (256, 56, 512, 1, 2, 0, None, False, False, True, False),  # stage 2 strided projection
    (256, 14, 256, 3, 1, 1, None, True, False, True, False),  # stage 4 3x3
    (512, 7, 2048, 1, 1, 0, "e4m3", True, True, False, False),  # stage 5 expand into the head
)


def _kernels(batch: int) -> bool:
    torch = import_torch()
    from mlperf_harness.engines.torch_fp8 import ops, tuning

    torch.manual_seed(0)
    config = tuning.CANDIDATES[2]
    print(f"FP8 kernel vs CPU reference, batch {batch}, tiling {tuning.label(config)}")
    print(
        f"{'layer (C,H,K,k,s,pad,res,relu,16,8,in16)':52} {'fp16 rel':>9} {'max steps':>9} "
        f"{'>1 step %':>9} {'off %':>7}"
    )
    good = True
    for c, h, k, size, stride, pad, res, relu, store16, store8, fp16_in in LAYER_FORMS:
        x8 = (torch.randn(batch, c, h, h) * 2).contiguous(memory_format=torch.channels_last)
        x8 = x8.half() if fp16_in else ops.as_bits(x8)
        w8 = ops.as_bits(torch.randn(k, size, size, c))
        alpha = torch.rand(k) * (4.0 / (size * size * c))
        bias = torch.randn(k) * 0.1
        pads = [pad] * 4
        residual = None
        if res is not None:
            shape = ops.output_shape(x8.shape, w8.shape, stride, pads)
            residual = torch.randn(shape).half().contiguous(memory_format=torch.channels_last)
            if res == "e4m3":
                residual = ops.quantize(residual, 64.0)
        args = (alpha, bias)
        gpu = [t.cuda() if t is not None else None for t in (x8, w8, *args, residual)]
        # Every kernel and epilogue form tuning may choose for the layer: prefetching with a
        # residual, the TMA GEMM (one program a tile or persistent) on a 1x1 layer of stride 1
        # (reading e4m3 or fp16), the TMA implicit GEMM on a 3x3 one of stride 1 and a strided
        # 1x1 one reading e4m3.
        tma = ops.tma_kernel((size, size), stride, pads, fp16_in)
        tilings = [config]
        if tma == ops.POINTWISE:
            tilings.append(replace(config, tma=1))
        if res is not None:
            tilings += [replace(tiles, prefetch=1) for tiles in tilings]
        if tma == ops.POINTWISE:  # the persistent TMA GEMM, a program an SM
            tilings.append(replace(config, tma=1, persistent=1))
        elif tma == ops.SPATIAL:  # the TMA implicit GEMM, 16 x 8 pixels, a tile a program and
            # persistent (a program an SM)
            tilings.append(replace(config, tma=1, tile_w=8))
            tilings.append(replace(config, tma=1, tile_w=8, persistent=1))
        for tiles in tilings:
            flags = (stride, pads, relu, 4.0, 1 / 64.0, 16.0, store16, store8, tiles.as_list())
            ref16, ref8 = ops.conv(x8, w8, *args, residual, *flags)
            y16, y8 = ops.conv(gpu[0], gpu[1], gpu[2], gpu[3], gpu[4], *flags)
            rel = steps = beyond = off = 0.0
            if store16:
                diff = (y16.cpu().float() - ref16.float()).abs().max()
                rel = float(diff / ref16.float().abs().max().clamp_min(1e-6))
                good &= rel < 2e-3
            if store8:
                steps, beyond, off = _e4m3_off(y8.cpu(), ref8)
                good &= beyond <= 0.1
            form = f"({c},{h},{k},{size},{stride},{pad},{res},{relu},{store16},{store8},{fp16_in})"
            form += " prefetch" if tiles.prefetch else ""
            form += " tma" if tiles.tma else ""
            form += " persistent" if tiles.persistent else ""
            form += " spatial" if tiles.tile_w else ""
            print(f"{form:52} {rel:9.1e} {steps:9.2f} {beyond:9.4f} {off:7.3f}")
    # The stem's fused bias, relu and max pool (3x3, stride 2; padded by 1 a side as PyTorch's
    # ResNet, or after the last row and column only as TensorFlow's SAME), storing fp16 and e4m3:
    # a maximum is exact and the bias is added in fp32 and rounded once, so both must equal the
    # reference.
    x = (torch.randn(batch, 64, 112, 112) * 3).half().contiguous(memory_format=torch.channels_last)
    bias = torch.randn(64).half().float()
    for pads in ([1, 1, 1, 1], [0, 0, 1, 1]):
        ref16, ref8 = ops.max_pool(x, 3, 2, pads, True, 20.0, True, bias)
        y16, y8 = ops.max_pool(x.cuda(), 3, 2, pads, True, 20.0, True, bias.cuda())
        same16 = bool(torch.equal(y16.cpu(), ref16))
        off = float((y8.cpu() != ref8).float().mean() * 100)
        form = f"max pool (64,112,3,2,{''.join(map(str, pads))},bias,relu), fp16 and e4m3"
        print(f"{form:52} fp16 {'equal' if same16 else 'DIFFER'}, e4m3 off {off:.4f}%")
        good &= same16 and off == 0.0
    # The input's cast to fp16 NHWC, padded to 4 channels: round to nearest on both sides, so equal.
    x = torch.randn(batch, 3, 224, 224) * 100
    same = bool(torch.equal(ops.nhwc_half(x.cuda(), 4).cpu(), ops.nhwc_half(x, 4)))
    print(
        f"{'input (3,224) fp32 NCHW to fp16 NHWC, 4 channels':52} {'equal' if same else 'DIFFER'}"
    )
    good &= same
    good &= _stem(batch)
    print("kernels:", "PASS" if good else "FAIL")
    return good


def _stem(batch: int, timed_batch: int = 256) -> bool:
    """The stem (plan.Fp8StemLayer: ResNet-50's 7x7 convolution of stride 2 over the 4-channel
    input, its bias, relu, the 3x3 max pool of stride 2, e4m3) in every form tuning may choose,
    against the CPU reference by the convolutions' e4m3 rule (the GPU sums in another order, and the
    unfused form rounds to fp16 twice: after the convolution and after the pool's bias); then every
    form timed at `timed_batch` as tuning times it, the fused kernel's tilings against cuDNN's
    convolution and the max pool kernel."""
    torch = import_torch()
    from mlperf_harness.engines.torch_fp8 import ops, plan, tuning

    w = (torch.randn(64, 7, 7, 4) * 0.1).half()
    w[..., 3] = 0.0
    bias = (torch.randn(64) * 0.1).half().float()
    pads, scale = [3, 3, 3, 3], 20.0
    good = True
    # Every form on ResNet's 224 x 224 with PyTorch's pool padding; the fused kernel on an odd width
    # too, where it copies its input 8 bytes at a time (no form tuning tries on 224 does), and with
    # TensorFlow's SAME pool padding (after the last row and column only).
    torch_pool, tf_pool = [1, 1, 1, 1], [0, 0, 1, 1]
    checks = [(224, torch_pool, config) for config in tuning.STEM_CANDIDATES]
    checks.append((223, torch_pool, tuning.STEM_CANDIDATES[1]))
    checks.append((224, tf_pool, tuning.STEM_CANDIDATES[1]))
    for size, pool_pads, config in checks:
        x = torch.randn(batch, 4, size, size)
        x[:, 3] = 0.0  # the input pass's zero channel
        x = x.half().contiguous(memory_format=torch.channels_last)
        ref8 = ops.stem_pool(x, w, bias, pads, pool_pads, scale, config.as_list())  # the CPU's
        y8 = ops.run_stem(x.cuda(), w.cuda(), bias.cuda(), pads, pool_pads, scale, config)
        steps, beyond, off = _e4m3_off(y8.cpu(), ref8)
        good &= beyond <= 0.1
        form = f"stem (4,{size},64,7,2,3) pool {''.join(map(str, pool_pads))} "
        print(f"{form + tuning.stem_label(config):52} {'':9} {steps:9.2f} {beyond:9.4f} {off:7.3f}")
    layer = plan.Fp8StemLayer(
        name="stem",
        input="input",
        weights=w.float().numpy(),
        bias=bias.numpy(),
        pads=(3, 3, 3, 3),
        pool_pads=(1, 1, 1, 1),
        out8_scale=scale,
    )
    choice = tuning.choose_stem(torch, tuning.StemShape(timed_batch, 224, 224, layer))
    print(f"stem at batch {timed_batch}, us per call (CUDA graph of {tuning.TIMED}):")
    for form, us in choice.tried.items():
        print(f"  {us:9.1f}  {form}{'  <- fastest' if us == choice.microseconds else ''}")
    return good


def _e4m3_off(got8: Any, want8: Any) -> tuple[float, float, float]:
    """(the largest distance in e4m3 steps of the larger value, % of elements more than one step
    off, % of elements off at all) between two tensors of e4m3 bits."""
    torch = import_torch()
    from mlperf_harness.engines.torch_fp8 import ops

    got, want = ops.from_bits(got8).float(), ops.from_bits(want8).float()
    distance = (got - want).abs() / _e4m3_step(torch.maximum(got.abs(), want.abs()))
    return (
        float(distance.max()),
        float((distance > 1.0).float().mean() * 100),
        float(((got - want) != 0).float().mean() * 100),
    )


def _e4m3_step(values: Any) -> Any:
    """The spacing of e4m3 values around each element (3 mantissa bits; subnormals below 2^-6)."""
    torch = import_torch()
    exponent = torch.floor(torch.log2(values.abs().clamp_min(2.0**-6)))
    return torch.pow(2.0, exponent - 3)


def _engines(fp8: Path, fp16: Path, model: Path, preprocessed: Path, count: int) -> bool:
    torch = import_torch()
    import onnxruntime as ort

    from mlperf_harness.datasets.imagenet.preprocess import FP32, PreprocessedSamples

    store = PreprocessedSamples(preprocessed)
    images = np.asarray(store.load(range(min(count, len(store))), FP32), dtype=np.float32)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    ran = session.run(None, {session.get_inputs()[0].name: images})
    want = {name: np.asarray(value) for name, value in zip(names, ran, strict=True)}
    results: dict[str, dict[str, Any]] = {}
    for label, package in (("fp8", fp8), ("fp16", fp16)):
        io = json.loads(io_path(package).read_text())
        loaded = load_package(package)
        batch = int(io["input_shape"][0])
        outs: dict[str, list[Any]] = {name: [] for name in io["output_names"]}
        for first in range(0, len(images), batch):
            chunk = images[first : first + batch]
            padded = np.zeros((batch, *images.shape[1:]), dtype=np.float32)
            padded[: len(chunk)] = chunk
            got = loaded(torch.from_numpy(padded).cuda())
            for name, tensor in zip(io["output_names"], got, strict=True):
                outs[name].append(tensor.cpu().numpy()[: len(chunk)])
        results[label] = {name: np.concatenate(parts) for name, parts in outs.items()}
    softmax = next(name for name in names if "softmax" in name.lower())
    argmax = next(name for name in names if "argmax" in name.lower())
    print(f"engines vs ONNX Runtime fp32 on {len(images)} stand-in images")
    good = True
    for label, engine_outputs in results.items():
        labels = np.asarray(engine_outputs[argmax]).reshape(-1)
        agree = float((labels == want[argmax].reshape(-1)).mean() * 100)
        diff = float(np.abs(engine_outputs[softmax] - want[softmax]).max())
        print(f"  {label:5} argmax agreement {agree:6.2f}%  softmax max|d| {diff:.2e}")
        good &= agree >= 99.0
    return good


def _profile(package: Path, calls: int) -> bool:
    """Each GPU kernel's time per engine call (summed over its launches), largest first: what the
    engine spends outside its FP8 convolutions, and on what. The calls run eagerly: the runner's
    CUDA graph runs the same kernels without the launch gaps (this sums the kernels' own times)."""
    torch = import_torch()
    profiler = torch.profiler
    io = json.loads(io_path(package).read_text())
    engine = load_package(package)
    x = torch.randn(io["input_shape"], device="cuda")
    for _ in range(3):
        engine(x)
    torch.cuda.synchronize()
    activities = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
    with profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            engine(x)
        torch.cuda.synchronize()
    per_kernel: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type.name == "CUDA" and event.name:
            entry = per_kernel.setdefault(event.name, [0.0, 0])
            entry[0] += event.device_time
            entry[1] += 1
    launched_by = _launching_ops(prof.events())
    if not per_kernel:
        print(f"{package}: the profiler recorded no GPU kernel")
        return False
    total = sum(entry[0] for entry in per_kernel.values()) / calls
    print(f"{package.parent.name}: GPU kernel time {total / 1000:.3f} ms per call ({calls} calls)")
    print(f"{'us/call':>9} {'share':>6} {'launches':>8}  kernel")
    for name, (us, launches) in sorted(per_kernel.items(), key=lambda kv: -kv[1][0])[:25]:
        print(
            f"{us / calls:9.1f} {100 * us / calls / total:5.1f}% {launches // calls:8d}  {name[:90]}"
        )
        if name in launched_by:  # which op launched it: ATen's kernel names hide their functor
            print(f"{'':26}launched by {', '.join(sorted(launched_by[name]))}")
    # The convolutions' kernels by the op that launched them: the pointer kernel, the 1x1 GEMM and
    # the implicit GEMM alike (counting one kernel's name left the TMA ones out).
    fp8 = (
        sum(
            us
            for name, (us, _) in per_kernel.items()
            if any(op.startswith("mlperf_fp8::conv") for op in launched_by.get(name, ()))
        )
        / calls
    )
    print(
        f"FP8 convolution kernels {fp8 / 1000:.3f} ms, everything else {(total - fp8) / 1000:.3f} ms"
    )
    return True


def _launching_ops(events: Any) -> dict[str, set[str]]:
    """GPU kernel name -> the CPU ops whose calls launched it (each op's own kernels, which torch's
    profiler links to the op by the launch's correlation id), each with the ops it ran inside,
    outermost first: "a > b > aten::copy_" names what asked for a copy, not only the copy."""
    found: dict[str, set[str]] = {}
    for event in events:
        if event.device_type.name != "CPU":
            continue
        for kernel in getattr(event, "kernels", None) or []:
            chain, parent = [str(event.name)], event.cpu_parent
            while parent is not None:
                chain.append(str(parent.name))
                parent = parent.cpu_parent
            found.setdefault(str(kernel.name), set()).add(" > ".join(reversed(chain)))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_fp8.device_check", description=__doc__)
    sub = parser.add_subparsers(dest="what", required=True)
    kernels = sub.add_parser("kernels")
    kernels.add_argument("--batch", type=int, default=8)
    engines = sub.add_parser("engines")
    engines.add_argument("--fp8", type=Path, required=True)
    engines.add_argument("--fp16", type=Path, required=True)
    engines.add_argument("--model", type=Path, required=True)
    engines.add_argument("--preprocessed_dir", type=Path, required=True)
    engines.add_argument("--count", type=int, default=512)
    profiled = sub.add_parser("profile")
    profiled.add_argument("package", type=Path)
    profiled.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    if args.what == "kernels":
        ok = _kernels(args.batch)
    elif args.what == "profile":
        ok = _profile(args.package, args.calls)
    else:
        ok = _engines(args.fp8, args.fp16, args.model, args.preprocessed_dir, args.count)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
