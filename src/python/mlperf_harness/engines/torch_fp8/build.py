"""Build the FP8 engine: calibrate (or reuse the cached maxima), plan, tune each convolution's tiling
and how the stem runs (fused or not) on this GPU, then export the module (exported.py: a program
file, its compiled kernels beside it) with the same io record as the fp16 engines, so the runner,
torch_raw and every scenario use it as they use those (the runner also lets it gather its batch
itself: ExportedEngine.gather).

torch is imported inside the functions: CPU hosts import this module (for engine keys) without it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.engines.calibration import Calibration
from mlperf_harness.engines.torch_aot.build import engine_io, load_for_build
from mlperf_harness.engines.torch_aot.metadata import write_io
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.engines.torch_fp8 import calibrate, exported, plan
from mlperf_harness.errors import HarnessError

PRECISION = "fp8"
TUNING_FILE = "tuning.json"
MIN_CAPABILITY = (8, 9)  # e4m3 tensor-core instructions: Ada (sm_89) and Hopper (sm_90)


@dataclass(frozen=True)
class Fp8Body:
    """What a benchmark's FP8 engine computes after the network, in the same program (RetinaNet's
    postprocessing): the ONNX outputs the network must give, the engine's own output names, and
    `wrap`, which takes the network (an EngineModule on the input pass's fp16 NHWC tensor) and
    returns the module exported; `operator_modules`, the modules whose import registers the custom
    operators the body calls (a loading process imports them: exported.register_operators)."""

    graph_outputs: tuple[str, ...]
    output_names: tuple[str, ...]
    wrap: Callable[[Any], Any]
    operator_modules: tuple[str, ...] = ()


def build_fp8_package(
    model_path: Path,
    out_dir: Path,
    *,
    batch_size: int,
    device: str,
    calibration: Calibration,
    amax_cache: Path,
    tuning_kernels: Path,
    fp16_convs: Collection[str] = (),
    body: Fp8Body | None = None,
) -> str:
    """Compile `model_path` into an FP8 engine in `out_dir`; return the program's file name.
    `tuning_kernels`: a Triton cache the host's FP8 builds share for the candidates tuning times.
    `fp16_convs`: convolutions kept in fp16 (plan.plan_fp8); `body`: work after the network (none:
    the engine's outputs are the model's)."""
    torch = import_torch()
    # Compiling the candidate tilings is most of a build's time, and the engines of a ladder differ
    # only in batch size, on which the kernels are not specialised: tuning compiles into (and finds
    # its kernels in) a cache every build on this host shares. Only the chosen ones go into the
    # engine's own cache, copied from there below.
    exported.use_kernel_cache(tuning_kernels)
    model, input_name, shape = load_for_build(model_path, batch_size, device)
    capability = torch.cuda.get_device_capability(0)
    if tuple(capability) < MIN_CAPABILITY:
        raise HarnessError(
            f"the FP8 engine needs a GPU of compute capability 8.9 or later (Ada, Hopper); "
            f"this one is {capability[0]}.{capability[1]}"
        )
    amax = calibrate.activation_amax(
        model_path, plan.calibrated_tensors(model, fp16_convs), calibration, amax_cache
    )
    fp8_plan = plan.plan_fp8(model, amax, fp16_convs)
    print(f"FP8 engine: {fp8_plan.summary()}", file=sys.stderr)

    from mlperf_harness.engines.torch_fp8 import module, ops, tuning

    # Any tiling that fits each layer, for the one forward that records the shapes.
    default = [tuning.candidates_for(layer)[0] for layer in fp8_plan.layers]
    graph_outputs = body.graph_outputs if body is not None else None
    # Stems unfused until tuning chooses.
    engine = module.Fp8EngineModule(fp8_plan, default, graph_outputs).cuda().eval()
    with torch.no_grad():
        engine.layers.input_shapes.clear()
        engine.layers.stem_input_shapes.clear()
        engine(torch.randn(shape, device="cuda"))  # records each layer's and stem's input shape
    seen = engine.layers.input_shapes
    shapes = [
        tuning.LayerShape(seen[index][0], seen[index][2], seen[index][3], layer)
        for index, layer in enumerate(fp8_plan.layers)
    ]
    started = time.monotonic()
    choices = tuning.choose_configs(torch, shapes)
    engine.layers.configs = [choice.config.as_list() for choice in choices]
    fp8_us, fp16_us = tuning.totals_us(choices)
    print(
        f"FP8 engine: convolutions tuned, {tuning.against_fp16(choices, batch_size)} (tuning "
        f"took {time.monotonic() - started:.0f} s)",
        file=sys.stderr,
    )
    seen_stems = engine.layers.stem_input_shapes
    stem_choices = [
        tuning.choose_stem(
            torch,
            tuning.StemShape(
                seen_stems[index][0], seen_stems[index][2], seen_stems[index][3], stem
            ),
        )
        for index, stem in enumerate(fp8_plan.stems)
    ]
    engine.layers.stem_configs = [choice.config.as_list() for choice in stem_choices]
    for choice in stem_choices:
        fused = isinstance(choice.config, ops.StemConfig) and choice.config.fused
        tried = ", ".join(f"{form} {us:.1f}" for form, us in choice.tried.items())
        print(
            f"FP8 engine: stem {choice.name!r} {'fused' if fused else 'unfused'}, "
            f"{choice.microseconds:.1f} us per batch of {batch_size} (us: {tried})",
            file=sys.stderr,
        )
    # The engine's own cache gets its kernels without compiling them again: the engine runs once
    # from the shared cache (tuning compiled every chosen kernel there), their directories are
    # copied, and the engine runs from its own cache alone below (anything missed compiles there).
    example = torch.randn(shape, device="cuda")
    kernels = exported.engine_kernels(out_dir)
    ops.forget_compiled_kernels()
    with torch.no_grad():
        engine(example)
    copied = exported.copy_kernels(ops.compiled_kernel_dirs(), kernels)
    print(f"FP8 engine: {copied} compiled kernels copied into its cache", file=sys.stderr)
    exported.use_kernel_cache(kernels)
    ops.forget_compiled_kernels()
    record = {
        "batch_size": batch_size,
        "plan": fp8_plan.summary(),
        "calibration": calibration.description,
        "fp8_conv_ms_per_batch": round(fp8_us / 1000, 3),
        "cudnn_fp16_conv_ms_per_batch": round(fp16_us / 1000, 3),
        "layers": [
            {**choice.to_json(), "gmacs": round(shape.macs() / 1e9, 3)}
            for choice, shape in zip(choices, shapes, strict=True)
        ],
        "stems": [choice.to_json() for choice in stem_choices],
    }
    write_bytes_atomic(out_dir / TUNING_FILE, json.dumps(record, indent=1).encode())
    # The program is the graph after the input pass: the loaded engine runs that pass itself,
    # gathering the batch from the samples where the runner has them (exported.py).
    exported_module = body.wrap(engine.engine) if body is not None else engine.engine
    with torch.no_grad():
        body_input = engine.body_input(example)
        # From the engine's cache: what a loading host will find.
        outputs = exported_module(body_input)
        program = torch.export.export(exported_module, (body_input,), strict=False)
    path = exported.save(program, out_dir, body.operator_modules if body is not None else ())
    write_io(
        path,
        engine_io(
            shape,
            outputs,
            input_name=input_name,
            output_names=body.output_names if body is not None else tuple(engine.output_names),
            precision=PRECISION,
            channels_last=True,
            device=device,
        ),
    )
    return path.name
