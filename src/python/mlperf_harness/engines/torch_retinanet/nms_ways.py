"""The ways RetinaNet's GPU postprocessing can run its per-class NMS, chosen when the engine is built
(an option of its key): both give greedy NMS's detections.

  scan    -- two Triton kernels (nms_kernel.py): the pairs' suppression bits, then one program per
             image walking the candidates in score order. The default.
  rounds  -- the first way, all torch: the bit matrix, then NMS_ROUNDS rounds of Cluster-NMS towards
             its fixed point, with one more to tell whether it was reached (postprocess.py). Kept for
             an A/B (benchmarks/retinanet/postprocess_ab.py).

No torch here: the engine's key and the command lines import it on any host.
"""

from __future__ import annotations

from mlperf_harness.errors import HarnessError

SCAN, ROUNDS = "scan", "rounds"
NMS_WAYS = (SCAN, ROUNDS)
DEFAULT_NMS = SCAN


def check_nms(way: str) -> str:
    if way not in NMS_WAYS:
        raise HarnessError(f"RetinaNet's GPU NMS is {' or '.join(NMS_WAYS)}, not {way!r}")
    return way
