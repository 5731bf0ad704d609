"""Hand a batch's outputs back to LoadGen in one QuerySamplesComplete call."""

from __future__ import annotations

from collections.abc import Sequence

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt


def complete_batch(response_ids: Sequence[int], outputs: npt.NDArray[np.generic]) -> None:
    """Row i of `outputs` is the response data of `response_ids[i]`.

    LoadGen copies the bytes of each response during the call (for the accuracy log), so `outputs`
    only has to live until this function returns.
    """
    rows = np.ascontiguousarray(outputs).reshape(len(response_ids), -1)
    row_bytes = rows.shape[1] * rows.itemsize
    base = rows.ctypes.data if row_bytes else 0
    responses = [
        lg.QuerySampleResponse(rid, base + i * row_bytes if row_bytes else 0, row_bytes)
        for i, rid in enumerate(response_ids)
    ]
    lg.QuerySamplesComplete(responses)
