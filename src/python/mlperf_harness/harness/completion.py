"""Hand a batch's outputs back to LoadGen in one QuerySamplesComplete call, the responses built in C++.

`complete` hands them to mlperf_loadgen (LoadGen's Python binding, `--loadgen_path python`);
`complete_native` to the LoadGen compiled into the native module (`--loadgen_path native`). A run
uses one of them only: a sample id of one LoadGen means nothing to the other.

LoadGen copies the bytes of each response during the call (for the accuracy log), so the outputs only
have to live until the call returns. The response objects are LoadGen's own QuerySampleResponse,
reused from a pool with their fields written in place ("pooled", checked against LoadGen's accessors
when this module is imported) or, if that check fails, constructed one per sample ("constructed").

Responses of different lengths (BERT logs only each feature's real tokens) come as rows of one
width plus each row's byte count: the native completer makes a response per whole row, and before
LoadGen gets them their sizes are cut to the counts (a Python loop over the batch, taken only by
runs that ask for it; the batch's timeline record is the native one either way).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import mlperf_loadgen as lg
import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.harness.batching import Batch

_COMPLETER = native.Completer(lg.QuerySamplesComplete, lg.QuerySampleResponse)
# The byte counts of the batch this thread is completing, read by _complete_cut (which the native
# completer calls back on the same thread, inside complete_batch).
_CUTS = threading.local()


def _complete_cut(responses: list[Any]) -> None:
    for response, size in zip(responses, _CUTS.sizes, strict=True):
        response.size = size
    lg.QuerySamplesComplete(responses)


_CUT_COMPLETER = native.Completer(_complete_cut, lg.QuerySampleResponse, in_place=False)


def complete(
    batch: Batch,
    outputs: npt.NDArray[np.generic],
    row_bytes: npt.NDArray[np.integer[Any]] | None = None,
) -> None:
    """Row i of `outputs` is the response data of the batch's i-th sample (rows may be empty);
    with `row_bytes`, only the first row_bytes[i] bytes of row i are."""
    if row_bytes is None:
        _COMPLETER.complete_batch(batch, outputs)
        return
    width = outputs.nbytes // len(batch) if len(batch) else 0
    sizes = [int(size) for size in row_bytes]
    if len(sizes) != len(batch) or any(not 0 <= size <= width for size in sizes):
        raise ValueError(f"row_bytes {sizes} do not fit {len(batch)} rows of {width} bytes")
    _CUTS.sizes = sizes
    try:
        _CUT_COMPLETER.complete_batch(batch, outputs)
    finally:
        _CUTS.sizes = None


def complete_native(
    batch: Batch,
    outputs: npt.NDArray[np.generic],
    row_bytes: npt.NDArray[np.integer[Any]] | None = None,
) -> None:
    """`complete`, into the LoadGen compiled into the native module (`--loadgen_path native`,
    loadgen/native_run.py): the responses are built and handed over in C++, the GIL released, and
    no Python object is made per sample. Refused unless a test of that LoadGen is running."""
    native.complete_in_loadgen(batch, outputs, row_bytes)


def complete_batch(response_ids: Sequence[int], outputs: npt.NDArray[np.generic]) -> None:
    """Row i of `outputs` is the response data of `response_ids[i]`."""
    _COMPLETER.complete(response_ids, outputs)


def completion_mode() -> str:
    """ "pooled" or "constructed": how the response objects are made (see the module doc)."""
    return _COMPLETER.mode
