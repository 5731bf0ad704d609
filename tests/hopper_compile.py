"""Triton kernels compiled for Hopper (sm_90) on this CPU: Triton's compiler and ptxas need no GPU.
Shared by the tests that check what a GPU would be given (the FP8 ResNet engine's kernels, the
Llama and GPT-J engines' decode attention). Imports triton where called: CI has none, and those
tests skip."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any


def compile_for_hopper(
    kernel: Any,
    types: dict[str, str],
    constants: dict[str, Any],
    aligned: tuple[str, ...] = (),
    **options: int,
) -> Any:
    """`kernel` compiled for sm_90 (into the Triton cache TRITON_CACHE_DIR names): `types` for its
    runtime arguments, `constants` for the rest; `aligned`: arguments specialised as divisible by
    16, as a launch specialises the pointers (and the integers) that are, so the compiler knows the
    alignment it vectorises on."""
    import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
    from triton.backends.compiler import GPUTarget  # type: ignore[import-not-found]  # pants: no-infer-dep
    from triton.compiler import ASTSource  # type: ignore[import-not-found]  # pants: no-infer-dep

    signature = {name: types.get(name, "constexpr") for name in kernel.arg_names}
    assert set(constants) == {name for name, kind in signature.items() if kind == "constexpr"}
    attrs = {(kernel.arg_names.index(name),): [["tt.divisibility", 16]] for name in aligned}
    source = ASTSource(kernel, signature, constants, attrs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def hopper_ptx(
    kernel: Any,
    types: dict[str, str],
    constants: dict[str, Any],
    aligned: tuple[str, ...] = (),
    **options: int,
) -> str:
    """The PTX of `kernel` for sm_90 (compile_for_hopper)."""
    return str(compile_for_hopper(kernel, types, constants, aligned, **options).asm["ptx"])


def cubin_resources(cubin: bytes, tmp_path: Path) -> dict[str, int]:
    """{REG, LOCAL, SHARED, ...} of a compiled kernel (its `asm["cubin"]`), as cuobjdump (Triton's
    own) reads them: registers a thread, bytes spilled, shared memory a block."""
    import triton  # pants: no-infer-dep

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    listing = subprocess.run(
        [str(tool), "--dump-resource-usage", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return {key: int(value) for key, value in re.findall(r"([A-Z]+):(\d+)", listing)}
