"""RetinaNet's NMS kernels (engines/torch_retinanet/nms_kernel.py) on the CPU, under Triton's
interpreter (retinanet_nms_interpreted.py, in a process of its own with TRITON_INTERPRET=1): keep
masks bit for bit equal to the torch fixed point's and the CPU reference's on seeded cases (overlaps
in chains, several classes, invalid tails, all and none suppressed, IoU exactly at the threshold;
candidate counts ending inside a word, and past a block of words, where tiles below the diagonal
return at once),
and whole detections equal through the postprocessing on heads with tied scores. Skipped where torch
or triton is not installed (CI); benchmarks/retinanet/device's postprocess phase checks the same on
a GPU, compiled."""

from __future__ import annotations

import pytest
from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = [needs_torch_and_triton, pytest.mark.slow]


def test_the_kernels_keep_what_greedy_nms_keeps() -> None:
    import retinanet_nms_interpreted

    stdout = run_interpreted(retinanet_nms_interpreted.__file__, timeout=1800)
    assert "DIFFER" not in stdout
    cases = len(retinanet_nms_interpreted.KS) * len(retinanet_nms_interpreted.CASES)
    assert stdout.count("equal") == cases + 2
