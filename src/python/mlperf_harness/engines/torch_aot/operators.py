"""What registers an engine's custom operators: a record beside the engine (OPERATORS_FILE) naming
the Python modules whose import registers them, and the operators its program calls.

Both kinds of torch engine need it: torch.export.load resolves every operator by name (the FP8
engine's program: RetinaNet's NMS, mlperf_retinanet::greedy_keep, failed to load without), and an
AOTInductor package calls custom operators through its proxy executor, which finds them only where
the loading process registered them (conv_epilogue_op's mlperf_conv::conv2d_relu).

Imports torch on call: only GPU hosts and the build call these functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError
from mlperf_harness.json_files import read_json

OPERATORS_FILE = "operators.json"
BUILT_IN_NAMESPACES = frozenset({"aten", "prims", "_c10d_functional", "higher_order"})


def custom_operators(program: Any) -> list[str]:
    """The qualified names (namespace::name) of the operators an exported `program` calls that
    torch does not register itself."""
    names = set()
    for node in program.graph.nodes:
        name = getattr(node.target, "name", None)  # OpOverload.name(): "namespace::op.overload"
        if node.op != "call_function" or not callable(name):
            continue
        qualified = str(name()).split(".")[0]
        if "::" in qualified and qualified.split("::")[0] not in BUILT_IN_NAMESPACES:
            names.add(qualified)
    return sorted(names)


def write_operators(out_dir: Path, program: Any, modules: Iterable[str]) -> None:
    """The record of `program`'s custom operators and the `modules` that register them."""
    record = {"modules": list(modules), "operators": custom_operators(program)}
    write_json_atomic(out_dir / OPERATORS_FILE, record)


def register_operators(engine_dir: Path) -> None:
    """Import the modules that register the engine's custom operators, and check that each operator
    the program calls is then known (a clear line instead of torch's loading trace)."""
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
