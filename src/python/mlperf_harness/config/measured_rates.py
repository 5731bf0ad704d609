"""LoadGen's expected rates for a run whose settings give none: derived from the engine as timed at
the start of the run (harness/engine_timing.py), by the rules below (docs/rates.md says them too).

LoadGen sizes a test from how fast it expects the system to be, and a wrong guess fails the run
either way: Offline's single query ends before the minimum duration on a faster machine
(INVALID), SingleStream and MultiStream run out of generated queries on a machine more than twice
as fast as expected (an error), and Server misses its latency bound on a slower one. So no CPU rate
is written in a config class: a rate comes from a config registered for this very system, a
custom system's file, user.conf or a flag, and where none of them gives one it is measured here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.config.registry import ResolvedSettings
from mlperf_harness.harness.engine_timing import EngineTiming
from mlperf_harness.loadgen.results import MIN_DURATION_UNMET, LoadgenResult
from mlperf_harness.loadgen.settings import Scenario, TestMode
from mlperf_harness.loadgen.user_conf import ConfLine
from mlperf_harness.rate_text import rate_text

MEASURED = "measured at start"  # the source label of every value derived here
# The label of a rate set by an earlier attempt of the run that ended early (next_attempt).
MEASURED_BY_EARLIER_ATTEMPT = "measured by the run's earlier attempt, which ended early"
MEASURED_SOURCES = (MEASURED, MEASURED_BY_EARLIER_ATTEMPT)
# Attempts in all of a run whose rate was measured at start and that keeps ending early: each at
# what the one before showed. An attempt that ended very early (a tenth of the minimum duration)
# shows the machine less well than a longer one (its start weighs more), and the next is longer.
MAX_ATTEMPTS = 3

# Offline: this many times the engine's peak (every runner at its fastest call's pace). LoadGen's
# one query holds 1.1 x min duration x expected samples/s, so the run is VALID unless it goes
# 1.1 x this much faster than the engine's fastest timed call.
OFFLINE_HEADROOM = 1.25
# Offline, once an attempt ended before the minimum duration: this many times the samples/s that
# attempt ran at. The timing at start lasts seconds, the attempt at least the minimum
# duration: a machine busy with other work while the engine was timed shows its speed there.
EARLY_END_HEADROOM = 1.25
# Server: this share of the samples/s timed at the config's batch size, so that queues stay short.
SERVER_LOAD = 0.5
# A stand-in's Server run whose batches cannot meet the benchmark's latency bound even alone (the
# batching timeout plus a batch's p99 on one runner over the bound: a CPU against ResNet-50's
# 15 ms) runs under this many times that instead: a stand-in is no MLPerf result, and the run
# shows the harness working on this machine.
STAND_IN_BOUND_FACTOR = 4

RATE_FIELDS = {
    Scenario.OFFLINE: "offline_expected_qps",
    Scenario.SERVER: "server_target_qps",
    Scenario.SINGLE_STREAM: "single_stream_expected_latency_ns",
    Scenario.MULTI_STREAM: "multi_stream_expected_latency_ns",
}
BOUND_FIELD = "server_target_latency_ns"
_CONF_KEYS = {  # each field's key in a user.conf
    "offline_expected_qps": "target_qps",
    "server_target_qps": "target_qps",
    "single_stream_expected_latency_ns": "target_latency",
    "multi_stream_expected_latency_ns": "target_latency",
    BOUND_FIELD: "target_latency",
}


# What makes the engine a rate was measured on: a run that changes any of them by a flag is another
# engine, and a rate that the layer naming the engine gave is not its own. Besides the backend and
# precision: the batch size (RetinaNet on an H200: 800 images/s at 8, 853 at 32; Server VALID at
# 793 queries/s with batches up to 16, where up to 8 was INVALID at 792), how DLRM-v2 pools its
# lookups (torch's embedding_bag ran at two thirds of the kernel's rate on an H200), its cross
# layers' update and RetinaNet's NMS (the two ways differ by a fifth of the postprocessing).
ENGINE_FIELDS = ("backend", "precision", "batch_size", "embedding", "cross", "nms")


def rates_of_another_engine(below: ResolvedSettings, flags: HarnessSettings) -> tuple[str, ...]:
    """The rates set `below` the command line by a layer (a config class, a system file) that also
    named the engine the flags now change (its backend, precision..., ENGINE_FIELDS): measured on
    another engine, so the run measures its own at start. (GPT-J's H200 config sets fp16 and the
    rates measured with it; `--precision fp8` is another engine.) A rate from a layer that named
    no engine stays: it was written for whatever engine runs."""
    changed_by = {
        below.origin_of(name)
        for name in ENGINE_FIELDS
        if getattr(flags, name) is not None
        and getattr(flags, name) != getattr(below.settings, name)
    }
    return tuple(
        name
        for name in RATE_FIELDS.values()
        if getattr(flags, name) is None and below.origin_of(name) in changed_by - {None}
    )


def rates_to_measure(
    settings: HarnessSettings,
    scenario: Scenario,
    mode: TestMode,
    user_conf: Sequence[ConfLine],
    *,
    stand_in: bool,
    latency_bound: bool = True,
) -> tuple[str, ...]:
    """The fields that no layer sets and the run needs, to be measured at its start: the scenario's
    rate (in AccuracyOnly only Server's, whose rate paces the accuracy run too), and for a stand-in
    in Server the latency bound, which is widened only where the machine cannot meet it.
    `user_conf`: the user.conf lines that apply to this run (user_conf.applicable).
    `latency_bound` False: mlperf.conf bounds no sample latency (Llama2's target_latency 0: only
    its first-token and per-token latencies count), so there is no bound to widen."""
    conf_keys = {line.key for line in user_conf}
    scenario = scenario.loadgen  # Interactive is LoadGen's Server
    wanted = [RATE_FIELDS[scenario]]
    if stand_in and scenario is Scenario.SERVER and latency_bound:
        wanted.append(BOUND_FIELD)
    if mode is TestMode.ACCURACY_ONLY and scenario is not Scenario.SERVER:
        return ()
    return tuple(
        name
        for name in wanted
        if getattr(settings, name) is None and _CONF_KEYS[name] not in conf_keys
    )


@dataclass(frozen=True)
class TimingPlan:
    """What to time for a scenario: calls of `batch_size` on every runner or on one, and how many
    such calls make one of the scenario's queries."""

    batch_size: int
    every_runner: bool
    calls_per_query: int = 1


def timing_plan(
    scenario: Scenario, settings: HarnessSettings, samples_per_query: int
) -> TimingPlan:
    batch_size = settings.batch_size or 1
    if scenario is Scenario.SINGLE_STREAM:
        return TimingPlan(1, every_runner=False)  # one sample a query, one query at a time
    if scenario is Scenario.MULTI_STREAM:
        batch = min(batch_size, samples_per_query)
        return TimingPlan(batch, every_runner=False, calls_per_query=-(-samples_per_query // batch))
    return TimingPlan(batch_size, every_runner=True)


@dataclass(frozen=True)
class MeasuredRates:
    settings: HarnessSettings  # the derived values, a layer over the run's settings
    line: str  # what was timed and what was set, for the run's output
    warning: str | None = None  # a bound no rate can meet (a real run: expect INVALID)


def derive_rates(
    fields: Sequence[str],
    scenario: Scenario,
    timing: EngineTiming,
    plan: TimingPlan,
    *,
    latency_bound_ns: int | None,
    batch_timeout_us: int,
    alone: EngineTiming | None = None,
) -> MeasuredRates:
    """The values of `fields` (rates_to_measure) from `timing`, by the rules at the top of this
    module. `latency_bound_ns`: Server's bound as the run stands (mlperf.conf's, or a layer's);
    `alone`: Server's batches timed on one runner, where `timing` had several side by side (they
    share a GPU, so each call there is slower than a batch that runs alone)."""
    values: dict[str, Any] = {}  # field -> value: HarnessSettings checks each
    said: list[str] = []
    warning = None
    rate = timing.samples_per_second
    fastest_query_ns = timing.latency_ns(0.0) * plan.calls_per_query
    if "offline_expected_qps" in fields:
        values["offline_expected_qps"] = round(OFFLINE_HEADROOM * timing.peak_samples_per_second, 3)
        said.append(
            f"offline_expected_qps = {values['offline_expected_qps']:,}"
            f" ({OFFLINE_HEADROOM}x the peak)"
        )
    for name in ("single_stream_expected_latency_ns", "multi_stream_expected_latency_ns"):
        if name in fields:
            values[name] = max(1, fastest_query_ns)
            said.append(f"{name} = {values[name]:,} (the fastest query)")
    if "server_target_qps" in fields:
        values["server_target_qps"] = round(SERVER_LOAD * rate, 3)
        said.append(
            f"server_target_qps = {values['server_target_qps']:,} ({SERVER_LOAD}x the rate)"
        )
    if scenario.loadgen is Scenario.SERVER and latency_bound_ns:
        # A query waits up to the batching timeout, then its batch runs: over the bound even with
        # the engine to itself, no rate can hold it. (A bound of 0, the LLMs' in mlperf.conf: no
        # bound on a query's whole latency; LoadGen holds its first-token and per-token bounds.)
        batch_p99_ns = (alone or timing).latency_ns(0.99)
        needed_ns = batch_timeout_us * 1000 + batch_p99_ns
        if needed_ns > latency_bound_ns:
            if BOUND_FIELD in fields:
                widened = math.ceil(STAND_IN_BOUND_FACTOR * needed_ns / 1e6) * 1_000_000
                values[BOUND_FIELD] = widened
                said.append(
                    f"{BOUND_FIELD} = {widened:,} ({STAND_IN_BOUND_FACTOR}x the batching timeout"
                    f" + a batch's p99; the benchmark's {latency_bound_ns / 1e6:g} ms is beyond"
                    " this machine, and a stand-in is no MLPerf result)"
                )
            else:
                warning = (
                    f"a batch's p99 ({batch_p99_ns / 1e6:.1f} ms) plus the batching timeout"
                    f" ({batch_timeout_us / 1000:g} ms) is over the latency bound"
                    f" ({latency_bound_ns / 1e6:g} ms): expect INVALID at any rate; try a smaller"
                    " --batch_size or --server_batch_timeout_us"
                )
    summary = (
        f"timed the engine at start ({timing.seconds:.1f} s, {timing.calls} calls of"
        f" {timing.batch_size} on {timing.runners} runner{'s' if timing.runners > 1 else ''}):"
        f" {rate:,.1f} samples/s (peak {timing.peak_samples_per_second:,.1f}),"
        f" fastest call {timing.latency_ns(0.0) / 1e6:.3f} ms,"
        f" p99 {timing.latency_ns(0.99) / 1e6:.3f} ms; set {'; '.join(said)}"
    )
    return MeasuredRates(HarnessSettings(**values), summary, warning)


# How LoadGen says a run ended early: Offline's reason (MIN_DURATION_UNMET, as loadgen/results.py
# words it from the summary), and the error of a SingleStream or MultiStream run whose queries,
# generated for twice the minimum duration at the expected latency, ran out before it.
RAN_OUT_OF_QUERIES = "Ran out of generated queries"


@dataclass(frozen=True)
class NextAttempt:
    settings: HarnessSettings  # the rate for the next attempt, over the last one's
    line: str  # why, and what is set: for the run's output


def given_rate_line(
    measured: Sequence[str], scenario: Scenario, result: LoadgenResult, origin: str | None
) -> str | None:
    """Where Offline's rate was given (a flag, user.conf or a recorded config: `origin`), not
    measured, and the run went so much faster that its query ended before the minimum duration:
    the one line saying so and what to give instead (the run stays INVALID: the rate is the
    user's, and a recorded one goes stale when its engine gets faster). None otherwise."""
    field = RATE_FIELDS[scenario.loadgen]
    rate = result.samples_per_second
    if (
        scenario.loadgen is not Scenario.OFFLINE
        or field in measured
        or MIN_DURATION_UNMET not in result.invalid_reasons
        or not rate
    ):
        return None
    return (
        f"the run went faster ({rate_text(rate)} samples/s) than its {field} ({origin or 'given'})"
        f" and ended before the minimum duration: INVALID; give --{field}"
        f" {round(EARLY_END_HEADROOM * rate, 3):,} ({EARLY_END_HEADROOM}x that rate), or correct"
        " the rate where it came from"
    )


def next_attempt(
    measured: Sequence[str], scenario: Scenario, result: LoadgenResult
) -> NextAttempt | None:
    """The rate for another attempt, where this one ended early because its rate, measured at start
    (or by an earlier attempt), was wrong for this machine as it runs now (a rate the user or a
    config gave is theirs to fix): Offline's query ended before the minimum duration, so
    EARLY_END_HEADROOM x the samples/s the attempt ran at; SingleStream's or MultiStream's queries
    ran out, so the attempt's fastest query. None where no other attempt is due. `measured`: the
    fields set at start."""
    scenario = scenario.loadgen
    field = RATE_FIELDS[scenario]
    if field not in measured:
        return None
    if scenario is Scenario.OFFLINE:
        rate = result.samples_per_second
        if MIN_DURATION_UNMET not in result.invalid_reasons or not rate:
            return None
        qps = round(EARLY_END_HEADROOM * rate, 3)
        return NextAttempt(
            HarnessSettings(offline_expected_qps=qps),
            f"the run went faster ({rate_text(rate)} samples/s) than timed at start and ended before"
            f" the minimum duration; running it again at offline_expected_qps = {qps:,}"
            f" ({EARLY_END_HEADROOM}x that rate)",
        )
    if scenario in (Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM):
        fastest = result.latency_ns.get("min")
        if not fastest or not any(RAN_OUT_OF_QUERIES in error for error in result.errors):
            return None
        values: dict[str, Any] = {field: fastest}  # HarnessSettings checks it
        return NextAttempt(
            HarnessSettings(**values),
            f"the run's queries went faster (the fastest {fastest / 1e6:.3f} ms) than timed at"
            " start, and LoadGen ran out of the queries it had generated; running it again at"
            f" {field} = {fastest:,} (that fastest query)",
        )
    return None
