"""The FP8 engine's file: a torch.export program (weights included) whose FP8 convolutions are the
`mlperf_fp8::conv` operator, with the Triton kernels it compiled beside it.

Why not AOTInductor like the fp16 engines: AOTInductor 2.11 recompiles user Triton kernels with its
own specialisation, and that compile failed in LLVM lowering for this kernel on the H200 where the
same kernel compiled and ran as given (2026-11-23). An exported program runs the kernels as Triton
compiles them; the runner captures every engine in a CUDA graph, so the eager dispatch between
kernels costs nothing per batch. The engine's kernels are put in `triton_cache/` beside the program
at build (copied from the cache the builds share, build.py), and a loading process points Triton
there (TRITON_CACHE_DIR), so a host with the engine compiles nothing.

Imports torch and triton on call: only GPU hosts call these functions.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError
from mlperf_harness.json_files import read_json

EXPORTED_FILE = "model_exported.pt2"  # runner.load_package loads this name as an exported program
TRITON_CACHE = "triton_cache"
# The Python modules whose import registers the custom operators the program calls, and those
# operators: torch.export.load resolves every operator by name, so a loading process must have
# registered each first (RetinaNet's NMS, mlperf_retinanet::greedy_keep, failed to load without).
OPERATORS_FILE = "operators.json"
# Every FP8 engine's: mlperf_fp8::* (ops.py) and mlperf_conv::conv2d_relu (the fp16 convolutions
# the plan keeps, module.py).
FP8_OPERATORS_MODULES = (
    "mlperf_harness.engines.torch_fp8.ops",
    "mlperf_harness.engines.torch_aot.conv_epilogue_op",
)
BUILT_IN_NAMESPACES = frozenset({"aten", "prims", "_c10d_functional", "higher_order"})


def use_kernel_cache(directory: Path) -> None:
    """Compile Triton kernels into (and find them in) `directory` from here on."""
    os.environ["TRITON_CACHE_DIR"] = str(directory)


def engine_kernels(engine_dir: Path) -> Path:
    """The Triton cache that holds an engine's own kernels."""
    return engine_dir / TRITON_CACHE


def copy_kernels(directories: Iterable[Path], cache: Path) -> int:
    """Copy compiled kernels' Triton cache directories into `cache`, where Triton then finds them
    (by the directory's name, the kernel's key); how many were copied. One that cannot be copied is
    left out whole: Triton then compiles that kernel into `cache` itself, so it costs time only."""
    copied = 0
    for directory in directories:
        target = cache / directory.name
        if target.exists():
            continue
        try:
            # Not another build's files in flight (Triton writes each through a tmp.pid_* folder).
            shutil.copytree(directory, target, ignore=shutil.ignore_patterns("tmp.*"))
        except OSError:  # shutil.Error is one
            shutil.rmtree(target, ignore_errors=True)
            continue
        copied += 1
    return copied


def custom_operators(program: Any) -> list[str]:
    """The qualified names (namespace::name) of the operators `program` calls that torch does not
    register itself."""
    names = set()
    for node in program.graph.nodes:
        name = getattr(node.target, "name", None)  # OpOverload.name(): "namespace::op.overload"
        if node.op != "call_function" or not callable(name):
            continue
        qualified = str(name()).split(".")[0]
        if "::" in qualified and qualified.split("::")[0] not in BUILT_IN_NAMESPACES:
            names.add(qualified)
    return sorted(names)


def save(exported: Any, out_dir: Path, operator_modules: Iterable[str] = ()) -> Path:
    """Save the program and what registers its custom operators (OPERATORS_FILE); the FP8
    engine's operator modules are always named, `operator_modules` are the body's (Fp8Body)."""
    torch = import_torch()
    path = out_dir / EXPORTED_FILE
    torch.export.save(exported, str(path))
    record = {
        "modules": [*FP8_OPERATORS_MODULES, *operator_modules],
        "operators": custom_operators(exported),
    }
    write_json_atomic(out_dir / OPERATORS_FILE, record)
    return path


def register_operators(engine_dir: Path) -> None:
    """Import the modules that register the engine's custom operators, and check that each operator
    the program calls is then known (a clear line instead of torch.export's deserialization
    trace)."""
    torch = import_torch()
    record_path = engine_dir / OPERATORS_FILE
    if not record_path.is_file():
        raise HarnessError(
            f"{record_path} is missing: the engine was built before its custom operators were "
            "recorded; delete its directory and it is built again"
        )
    record = read_json(record_path)  # unreadable or not JSON: one line
    for module in record["modules"]:
        importlib.import_module(module)
    for qualified in record["operators"]:
        namespace, name = qualified.split("::")
        if not hasattr(getattr(torch.ops, namespace), name):
            raise HarnessError(
                f"the engine in {engine_dir} calls {qualified}, which none of the modules it names "
                f"({', '.join(record['modules'])}) registers"
            )


class ExportedEngine:
    """The FP8 engine on one GPU: the input pass (ops.nhwc_half), then the exported program (the
    planned graph on its fp16 NHWC input). Called like an AOTInductor package (the fp32 NCHW batch
    -> output list), or through `gather` on rows of a GPU's copy of the samples, which the input
    pass then reads where they lie: no separate gather into an input buffer first."""

    def __init__(self, path: Path, device_index: int) -> None:
        torch = import_torch()
        # The program's operators (mlperf_fp8::conv and the body's) before it is loaded; ops also
        # gives the input pass.
        register_operators(path.parent)
        from mlperf_harness.engines.torch_fp8 import ops

        use_kernel_cache(engine_kernels(path.parent))
        # The program names the GPU it was exported on (cuda:0) in its constants and in the device
        # checks export inserts (aten._assert_tensor_metadata); moving only the module's
        # parameters left those on cuda:0, and the engine failed on any other GPU.
        passes = importlib.import_module("torch.export.passes")
        device = f"cuda:{device_index}"
        with torch.cuda.device(device_index):
            program = passes.move_to_device_pass(torch.export.load(str(path)), device)
            self._module = program.module()
        self._input_pass = ops.nhwc_half
        self.input_channels = _input_channels(program)

    def __call__(self, x: Any) -> list[Any]:
        return list(self._module(self._input_pass(x, self.input_channels)))

    def gather(self, samples: Any, rows: Any) -> list[Any]:
        """Outputs for the images at `rows` (int64, on the GPU) of `samples` (fp32 NCHW)."""
        return list(self._module(self._input_pass(samples, self.input_channels, rows)))


def _input_channels(program: Any) -> int:
    """The channels of the program's input (the input pass pads the images' to these)."""
    name = program.graph_signature.user_inputs[0]
    node = next(node for node in program.graph.nodes if node.name == name)
    return int(node.meta["val"].shape[1])
