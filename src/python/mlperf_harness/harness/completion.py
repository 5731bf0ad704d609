"""Hand a batch's outputs back to LoadGen in one QuerySamplesComplete call, the responses built in C++.

LoadGen copies the bytes of each response during the call (for the accuracy log), so the outputs only
have to live until the call returns. The response objects are LoadGen's own QuerySampleResponse,
reused from a pool with their fields written in place ("pooled", checked against LoadGen's accessors
when this module is imported) or, if that check fails, constructed one per sample ("constructed").
"""

from __future__ import annotations

from collections.abc import Sequence

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.harness.batching import Batch

_COMPLETER = native.Completer(lg.QuerySamplesComplete, lg.QuerySampleResponse)


def complete(batch: Batch, outputs: npt.NDArray[np.generic]) -> None:
    """Row i of `outputs` is the response data of the batch's i-th sample (rows may be empty)."""
    _COMPLETER.complete_batch(batch, outputs)


def complete_batch(response_ids: Sequence[int], outputs: npt.NDArray[np.generic]) -> None:
    """Row i of `outputs` is the response data of `response_ids[i]`."""
    _COMPLETER.complete(response_ids, outputs)


def completion_mode() -> str:
    """ "pooled" or "constructed": how the response objects are made (see the module doc)."""
    return _COMPLETER.mode
