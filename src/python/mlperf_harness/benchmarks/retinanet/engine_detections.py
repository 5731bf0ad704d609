"""The torch engine's output (postprocessing done on the GPU) and the rows LoadGen logs from it.

The engine returns one float32 tensor `detections` [N, 1 + 300, 7] per batch: for each image a
header row, then its detections best first in the logged layout (detections.py) with column 0 left
for the image index, which only the host knows; rows past the count are zeros. The header holds the
detection count, whether the GPU's NMS reached its fixed point (engines/torch_retinanet/
postprocess.py: it runs a fixed number of rounds), and how many candidates passed the score
threshold. The host only sets the index and cuts each image's rows to its count: 28 bytes a
detection come back, never the 120,087 x (4 + classes) head outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.retinanet.detections import (
    DETECTION_BYTES,
    DETECTIONS_PER_IMAGE,
    VALUES_PER_DETECTION,
)
from mlperf_harness.errors import HarnessError

ENGINE_OUTPUT = "detections"
HEADER_ROWS = 1
ROWS_PER_IMAGE = HEADER_ROWS + DETECTIONS_PER_IMAGE
# The header row's columns.
COUNT, CONVERGED, CANDIDATES = 0, 1, 2


def engine_rows(
    outputs: npt.NDArray[np.generic], sample_indices: Sequence[int]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """A batch's engine output [N, ROWS_PER_IMAGE, 7] -> detections.pack_rows' sized responses."""
    shape = (len(sample_indices), ROWS_PER_IMAGE, VALUES_PER_DETECTION)
    if outputs.shape != shape:
        raise HarnessError(
            f"the RetinaNet engine returned {list(outputs.shape)}, expected {list(shape)}"
        )
    batch = np.asarray(outputs, dtype=np.float32)
    headers = batch[:, 0]
    unsettled = np.flatnonzero(headers[:, CONVERGED] != 1)
    if len(unsettled):
        raise HarnessError(
            f"the GPU's NMS did not reach its fixed point for sample {sample_indices[unsettled[0]]} "
            f"({len(unsettled)} of the batch): its detections would differ from greedy NMS; raise "
            "NMS_ROUNDS in engines/torch_retinanet/postprocess.py (the engine rebuilds)"
        )
    # In bulk, laid out as detections.pack_rows lays them (rows as wide as the batch's most
    # detections, zeros past each image's own): no Python step per image (docs/retinanet.md: a
    # batch of 8 in 52 us where the loop over images took 85, on a loaded 2-core AMD EPYC).
    counts = headers[:, COUNT].astype(np.int64)
    if not len(counts):
        return np.zeros((0, 0), dtype=np.uint8), counts
    width = int(counts.max())
    rows = batch[:, HEADER_ROWS : HEADER_ROWS + width].copy()  # zeros past each count
    present = np.arange(width)[None, :] < counts[:, None]
    indices = np.asarray(sample_indices, dtype=np.float32)[:, None]
    rows[..., 0] = np.where(present, indices, np.float32(0))
    return rows.view(np.uint8).reshape(len(rows), -1), counts * DETECTION_BYTES
