"""Whether a run's latency queries are answered in C++ (native.InlineRoundTrips) or by the
harness's Python (HarnessSUT.run_pending), and the object that answers them.

C++ answers where every piece allows it: an inline scenario (SingleStream, MultiStream) on the
native LoadGen, an inline runner that has round trips to launch (Runner.inline_round_trips: the
torch runner with start_from_device and CUDA graphs), and responses that are integer labels taken
from the output as it comes back (PreparedRun.label_offset), whole. The inline runner is the first,
the one HarnessSUT runs inline queries on (a system of several GPUs makes one runner for each).
`native_round_trips` (a setting) turns it off with False; with True, a run where it cannot apply
is refused in one line that says why, rather than measured on the other path.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.paths import NATIVE
from mlperf_harness.native import InlineRoundTrips


def choose_round_trips(
    runners: Sequence[Runner],
    *,
    wanted: bool | None,
    inline: bool,
    loadgen_path: str,
    label_offset: int | None,
    whole_responses: bool,
) -> InlineRoundTrips | None:
    """The C++ answer for this run (None: Python answers). `wanted` is the native_round_trips
    setting (None: where it applies); `whole_responses` is False where responses are cut to
    per-sample sizes (PreparedRun.response_bytes)."""
    if wanted is False or not inline:
        return None
    why_not: str | None = None
    trips: InlineRoundTrips | None = None
    if loadgen_path != NATIVE:
        why_not = "it needs the native LoadGen (--loadgen_path native)"
    elif label_offset is None or not whole_responses:
        why_not = "this run's responses need the benchmark's postprocess, not only a label"
    else:
        trips = runners[0].inline_round_trips(label_offset)
        if trips is None:
            why_not = (
                f"the {runners[0].name} runner has no round trips to launch (the torch "
                "backend with start_from_device and CUDA graphs has)"
            )
    if why_not is not None and wanted:
        raise HarnessError(f"native_round_trips cannot apply: {why_not}")
    return trips
