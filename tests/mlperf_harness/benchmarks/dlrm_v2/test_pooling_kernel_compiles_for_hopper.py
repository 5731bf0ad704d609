"""DLRM-v2's pooled-lookup kernel compiled for Hopper (sm_90) on this CPU (Triton's compiler and
ptxas need no GPU): every launch form torch_raw --pooling_ab times, over fp16 and int8 rows, at the
real size (214 columns, 26 bags, 128 wide), compiles; adds its rows on the tensor cores (fp16
products accumulated in fp32); reads each row in 16-byte vectors; and keeps everything in registers
(no local memory). Prints each form's registers a thread: what bounds the programs an SM holds, so
the rows in flight. Where the interpreter checks what the kernel computes
(test_pooling_kernel_interpreted), this checks what an H200 would be given. Skipped where torch or
triton is not installed (CI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hopper_compile import cubin_resources
from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton

# The launch's arguments as a real-size batch gives them: pointers, then integers.
POINTERS = {"sparse_ptr": "*i32", "base_ptr": "*i64", "bag_ptr": "*i32", "out_ptr": "*fp16"}
INTEGERS = ("pairs", "row_lo", "row_hi", "SPARSE_STRIDE", "TABLE_STRIDE", "OUT_STRIDE")
# What a launch finds divisible by 16 (the packed rows' index columns start 14 in: not aligned).
# (OUT_STRIDE: 3,456, the interaction tensor's row, where the runner has the sums written.)
ALIGNED = ("base_ptr", "bag_ptr", "table_ptr", "scale_ptr", "out_ptr", "TABLE_STRIDE", "OUT_STRIDE")


def hopper_build(int8: bool, config: Any) -> Any:
    import triton  # type: ignore[import-not-found]  # pants: no-infer-dep
    from triton.backends.compiler import GPUTarget  # type: ignore[import-not-found]  # pants: no-infer-dep
    from triton.compiler import ASTSource  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.benchmarks.dlrm_v2.pooling_kernel import pooled_rows_kernel as kernel

    types = {**POINTERS, "table_ptr": "*i8" if int8 else "*fp16", "scale_ptr": "*fp16"}
    types |= dict.fromkeys(INTEGERS, "i32")
    constants = {"COLUMNS": 214, "BAGS": 26, "WIDTH": 128, "BAGS_BLOCK": 32, "WIDTH_BLOCK": 128}
    constants |= {"CHUNK": config.chunk, "PAIRS_PER_PROGRAM": config.pairs_per_program}
    constants["INT8"] = int8
    signature = {name: types.get(name, "constexpr") for name in kernel.arg_names}
    attrs = {(kernel.arg_names.index(name),): [["tt.divisibility", 16]] for name in ALIGNED}
    return triton.compile(
        ASTSource(kernel, signature, constants, attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": config.warps},
    )


def forms() -> list[tuple[bool, Any]]:
    from mlperf_harness.benchmarks.dlrm_v2 import pooled_lookup

    return [(False, config) for config in pooled_lookup.CANDIDATES] + [
        (True, config) for config in pooled_lookup.INT8_CANDIDATES
    ]


@pytest.mark.parametrize("form", range(10))
def test_every_form_sums_on_tensor_cores_from_16_byte_row_reads(
    form: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = forms()
    assert len(every) == 10
    int8, config = every[form]
    compiled = hopper_build(int8, config)
    ptx = str(compiled.asm["ptx"])
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "ld.global.v4.b32" in ptx  # 16 bytes a thread a row at a time
    used = cubin_resources(compiled.asm["cubin"], tmp_path)
    assert used["LOCAL"] == 0 and used["STACK"] == 0, used  # nothing spilled
    with capsys.disabled():
        rows = "int8" if int8 else "fp16"
        print(f"\n{rows} rows, {config.label()}: {used['REG']} registers a thread")
