"""DLRM-v2's pooled-lookup kernel on the CPU, under Triton's interpreter, against torch's
embedding_bag (what the runner does by default): the real bags (214 columns, 128 and 8 wide) and
odd ones (bags of no row and of one, a width that is not a power of two), no pairs and pair counts
that leave a program's second pair empty, every table's last row, every launch form the GPU A/B
times, int8 rows, shards of the rows, the runner's tables (gpu_tables.py) built on the CPU, the
sums written in place into the dense part's interaction tensor by every way of pooling (and its
probability unchanged by it), and torch_raw --pooling_ab's comparison timed by the wall clock (dlrm_pooling_interpreted.py, in a
process of its own with TRITON_INTERPRET=1). Skipped where torch or triton is not installed (CI);
torch_raw --pooling_ab runs the same comparison compiled, on a GPU."""

from __future__ import annotations

from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def test_the_kernel_sums_what_embedding_bag_sums() -> None:
    import dlrm_pooling_interpreted

    stdout = run_interpreted(dlrm_pooling_interpreted.__file__, timeout=300)
    assert stdout.count("equal") == 57 and "DIFFER" not in stdout
