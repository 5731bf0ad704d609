"""The table every benchmark's device script (benchmarks/*/device/gpu_scenarios.sh) ends with: each
harness run on the GPU against the raw speed of its own engine, measured in the same call (the
benchmark's torch_raw writes raw.json: per engine, its precision, batch size, samples/s and latency
percentiles). A run is compared with the engine of its own precision and batch size.

Offline samples/s against the raw throughput of the Offline batch's engine; Server's completed
samples/s against the Offline run from GPU memory; SingleStream p90 and MultiStream p99 against the
raw p90 latency of the batch-1 and p99 of the batch-8 engine.

A series (the device script's `series` phase, in series/) alternates the Offline batch's engine
alone and an Offline run, round after round: each Offline run is compared with the raw figure taken
just before it, since the machine's speed drifts between calls. A stream series (`stream_series`)
does the same for SingleStream and MultiStream against the latency of the batch-1 and batch-8
engines: their latency drifts by several percent from one minute to the next, as much as the 10%
the runs are held to.

Server's runs that a search made (device_lib.sh's server_search: <label>_q<target>.json) end the
run lines with one line per search: its best VALID run, or that none was (server_search.py).

Where a Server run's harness timeline was kept (timelines/<label>.json), the table says where its
slow samples were: the time bins holding a sample slower than twice the run's median latency, and
the gaps between the episodes those bins form. Episodes at a regular gap point at something
periodic beside the run (a monitor's queries of the driver, a timer on the host), not at the load.
It also names the bins where the samples arriving from LoadGen fell under half their median rate,
and how many of those saw completions fall too: LoadGen issues on its own schedule, so arrivals that
stop mean its issue thread did not run (under its Python binding, the GIL held elsewhere, or the
host), and completions stopping with them mean the whole process stood still, not the GPUs. Where
the stall probe ran beside the run (stalls/<label>.json, benchmarks/stall_probe.py), it says in how
many of those bins the probe, a process of its own, was held up too: the host, not our process.
For a SingleStream or MultiStream run it gives the mean latency in each tenth of the run, and the
harness's own p90 and p99 beside LoadGen's: where the time goes, in the harness or outside it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.result_table import MS, rate, table_main, verdict
from mlperf_harness.benchmarks.server_search import search_lines
from mlperf_harness.benchmarks.stall_probe import read_stall_record
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.timeline import Timeline, read_timeline

RawKey = tuple[str, int]  # (precision, batch size)
SERIES = "series"  # the series phase's subdirectory: raw_<i>.json and offline_<i>.json
# The stream series' runs in SERIES (<name>_<i>.json, after raw_<name>_<i>.json): name, scenario,
# the percentile it is held to.
STREAM_SERIES = (("singlestream", "SingleStream", "p90"), ("multistream", "MultiStream", "p99"))
TIMELINES = "timelines"  # each run's harness_timeline.json as <label>.json (device_lib.sh)
STALLS = "stalls"  # the stall probe's record beside each run as <label>.json (device_lib.sh)
# A bin whose arrivals fall under this share of the run's median stopped receiving; below
# MIN_ARRIVALS a bin (median), Poisson noise alone makes such bins, so none are named.
ARRIVAL_DIP = 0.5
MIN_ARRIVALS = 50


def _load(directory: Path) -> tuple[dict[RawKey, dict[str, Any]], dict[str, dict[str, Any]]]:
    raw_file = directory / "raw.json"
    raw: dict[RawKey, dict[str, Any]] = {}
    if raw_file.is_file():
        raw = {
            (row["precision"], row["batch_size"]): row
            for row in json.loads(raw_file.read_text())["engines"]
        }
    runs = {
        path.stem: json.loads(path.read_text())
        for path in sorted(directory.glob("*.json"))
        if path.name != "raw.json"
    }
    # a phase's own record beside the runs (a profile, an engine's timing) is not a run
    return raw, {name: run for name, run in runs.items() if "scenario" in run}


def _setting(run: dict[str, Any], name: str) -> Any:
    return run.get("settings", {}).get(name, {}).get("value")


def _engine(run: dict[str, Any], raw: dict[RawKey, dict[str, Any]]) -> dict[str, Any] | None:
    """The raw engine of the run's precision and batch size (a run that records no precision:
    the only raw engine of its batch size)."""
    batch, precision = _setting(run, "batch_size"), _setting(run, "precision")
    if batch is None:
        return None
    if precision is not None:
        return raw.get((str(precision), int(batch)))
    of_batch = [row for (_, size), row in raw.items() if size == int(batch)]
    return of_batch[0] if len(of_batch) == 1 else None


def _compare(run: dict[str, Any], raw: dict[RawKey, dict[str, Any]], offline: float | None) -> str:
    scenario, batch = run["scenario"], _setting(run, "batch_size")
    engine = _engine(run, raw)
    latency = run.get("latency_ns", {})
    if scenario == "Offline" and engine and run.get("samples_per_second"):
        return (
            f"{100 * run['samples_per_second'] / engine['samples_per_second']:.1f}% of raw b{batch}"
        )
    if scenario == "Server" and offline and run.get("completed_samples_per_second"):
        return f"{100 * run['completed_samples_per_second'] / offline:.1f}% of Offline"
    if scenario == "SingleStream" and engine and "p90" in latency:
        ratio = latency["p90"] / MS / engine["latency_ms"]["p90"]
        return f"p90 {100 * (ratio - 1):+.1f}% vs raw b{batch} p90"
    if scenario == "MultiStream" and engine and "p99" in latency:
        ratio = latency["p99"] / MS / engine["latency_ms"]["p99"]
        return f"p99 {100 * (ratio - 1):+.1f}% vs raw b{batch} p99"
    return ""


def _accuracy(accuracy: dict[str, Any]) -> str:
    """The accuracy record of result.json in a few words: ResNet-50's top-1, BERT's F1,
    3D-UNet's DICE."""
    if "top1_percent" in accuracy:
        return f"top-1 {accuracy['top1_percent']}% ({accuracy['good']}/{accuracy['total']})"
    if "f1" in accuracy:
        return f"F1 {accuracy['f1']}, exact match {accuracy['exact_match']}"
    if "mean_dice" in accuracy:
        return (
            f"mean DICE {accuracy['mean_dice']} (kidney {accuracy['kidney_dice']}, tumour "
            f"{accuracy['tumour_dice']}), reference {accuracy['reference_dice']}"
        )
    return ", ".join(f"{key} {value}" for key, value in accuracy.items())


def _series_lines(directory: Path) -> list[str]:
    """One line per round of series/raw_<i>.json and series/offline_<i>.json, and the lowest share."""
    folder = directory / SERIES
    rounds = sorted(
        int(path.stem.removeprefix("offline_")) for path in folder.glob("offline_*.json")
    )
    lines: list[str] = []
    shares = []
    for index in rounds:
        raw_file = folder / f"raw_{index}.json"
        if not raw_file.is_file():
            continue
        run = json.loads((folder / f"offline_{index}.json").read_text())
        raw = json.loads(raw_file.read_text())
        engine = raw["engines"][0]
        # The engine ran on one GPU, the Offline run on all of them.
        gpus = int(raw.get("gpus", 1))
        share = 100 * rate(run) / (engine["samples_per_second"] * gpus)
        shares.append(share)
        times = f" x {gpus} GPUs" if gpus > 1 else ""
        lines.append(
            f"{'round ' + str(index):<34}{engine['samples_per_second']:>12,.0f}{rate(run):>12,.0f}"
            f"  {verdict(run):<8}{share:.1f}% of raw {engine['precision']} b{engine['batch_size']}"
            f"{times}"
        )
    if not lines:
        return []
    header = f"{'series: raw, then Offline':<34}{'raw/s':>12}{'Offline/s':>12}  {'valid':<8}share"
    return [header, *lines, f"{'lowest share':<34}{min(shares):.1f}%"]


def _stream_series_runs(directory: Path) -> dict[str, dict[str, Any]]:
    """The stream series' runs by their harness label (series_<name>_<i>, as their timelines are
    named), in round order."""
    runs = {}
    for name, _, _ in STREAM_SERIES:
        # <name>_<i>, and a variant's <name>-<variant>_<i> (the device script's INLINE_AB)
        for pattern in (f"{name}_*.json", f"{name}-*_*.json"):
            for path in (directory / SERIES).glob(pattern):
                runs[f"series_{path.stem}"] = json.loads(path.read_text())
    return dict(sorted(runs.items(), key=lambda item: int(item[0].rsplit("_", 1)[1])))


def _stream_series_lines(directory: Path, runs: dict[str, dict[str, Any]]) -> list[str]:
    """One line per stream series run: the engine's latency just before it, the run's, and how far
    above the engine's the run was; then the most each scenario was above."""
    lines: list[str] = []
    worst: dict[str, float] = {}
    for label, run in runs.items():
        name, index = label.removeprefix("series_").rsplit("_", 1)
        scenario_name = name.split("-", 1)[0]  # a variant's runs are held to its scenario's raw
        raw_file = directory / SERIES / f"raw_{scenario_name}_{index}.json"
        percentile = next(p for n, _, p in STREAM_SERIES if n == scenario_name)
        if not raw_file.is_file() or percentile not in run.get("latency_ns", {}):
            continue
        engine = json.loads(raw_file.read_text())["engines"][0]
        raw_ms, run_ms = engine["latency_ms"][percentile], run["latency_ns"][percentile] / MS
        above = 100 * (run_ms / raw_ms - 1)
        worst[name] = max(worst.get(name, above), above)
        lines.append(
            f"{name + ' ' + index:<34}{raw_ms:>12.3f}{run_ms:>12.3f}  {verdict(run):<8}"
            f"{percentile} {above:+.1f}% vs raw {engine['precision']} b{engine['batch_size']}"
            + (f", answered in {run['inline_answers']}" if "inline_answers" in run else "")
        )
    if not lines:
        return []
    header = f"{'series: raw, then the run':<34}{'raw ms':>12}{'run ms':>12}  {'valid':<8}vs raw"
    most = ", ".join(f"{name} {above:+.1f}%" for name, above in worst.items())
    return [header, *lines, f"{'most above raw':<34}{most}"]


def _timelines(
    directory: Path, runs: dict[str, dict[str, Any]], scenarios: tuple[str, ...]
) -> Iterator[tuple[str, dict[str, Any], Timeline | str]]:
    """(label, run, its timeline) for each run of `scenarios` with a timeline kept and a p50; in
    place of a timeline that cannot be read, a line that says why (it costs that line only)."""
    for label, run in runs.items():
        path = directory / TIMELINES / f"{label}.json"
        kept = run.get("latency_ns", {}).get("p50") and path.is_file()
        if run.get("scenario") not in scenarios or not kept:
            continue
        try:
            yield label, run, read_timeline(path)
        except HarnessError as error:
            yield label, run, f"{label}: {error}"


def _slow_bins_lines(directory: Path, runs: dict[str, dict[str, Any]]) -> list[str]:
    """For each Server run with a timeline: its bins holding a sample slower than twice its p50,
    the episodes they form (runs of neighbouring bins), when those start and their median gap."""
    lines = []
    for label, run, timeline in _timelines(directory, runs, ("Server",)):
        if isinstance(timeline, str):
            lines.append(timeline)
            continue
        median = run["latency_ns"]["p50"]
        width_s = timeline.bin_width_ns / 1e9
        slow = [i for i, worst in enumerate(timeline.latency_max_ns) if worst > 2 * median]
        episodes = [i for n, i in enumerate(slow) if n == 0 or slow[n - 1] != i - 1]
        starts = ", ".join(f"{i * width_s:.2f}" for i in episodes[:6])
        more = ", ..." if len(episodes) > 6 else ""
        gaps = [(later - first) * width_s for first, later in pairwise(episodes)]
        gap = f"; median gap {statistics.median(gaps):.2f} s" if gaps else ""
        plural = "s" if len(episodes) > 1 else ""
        where = (
            f" in {len(episodes)} episode{plural} from {starts}{more} s{gap}" if episodes else ""
        )
        lines.append(
            f"{label}: {len(slow)} of {len(timeline.latency_max_ns)} bins of "
            f"{width_s * 1000:.1f} ms hold a sample slower than {2 * median / MS:.1f} ms "
            f"(2x p50){where}"
        )
        lines += _arrival_dips_line(label, timeline, directory / STALLS / f"{label}.json")
    return ["slow samples in time (harness timelines)", *lines] if lines else []


def _arrival_dips_line(label: str, timeline: Timeline, stalls_path: Path) -> list[str]:
    """The bins (the first and last, partial, left out) where arrivals from LoadGen fell under
    ARRIVAL_DIP of their median, how many saw completions fall likewise in the same or the next bin
    (a batch leaves a few ms after its samples arrive), when the first of them were, and, where
    the stall probe's record is at stalls_path, in how many of them the probe was held up."""
    inner = range(1, len(timeline.issued) - 1)
    if not inner:
        return []
    arrivals = statistics.median(timeline.issued[i] for i in inner)
    completions = statistics.median(timeline.completed[i] for i in inner)
    if arrivals < MIN_ARRIVALS:
        return []
    dips = [i for i in inner if timeline.issued[i] < ARRIVAL_DIP * arrivals]
    if not dips:
        return []
    stopped = sum(
        1
        for i in dips
        if min(timeline.completed[i], timeline.completed[i + 1]) < ARRIVAL_DIP * completions
    )
    width_s = timeline.bin_width_ns / 1e9
    at = ", ".join(f"{i * width_s:.2f}" for i in dips[:8]) + (", ..." if len(dips) > 8 else "")
    return [
        f"{label}: arrivals from LoadGen under half their median ({arrivals:.0f} a bin) in "
        f"{len(dips)} bin{'s' if len(dips) > 1 else ''}, {stopped} of them with completions "
        f"down too, at {at} s" + _probe_clause(timeline, dips, stalls_path)
    ]


def _probe_clause(timeline: Timeline, dips: list[int], stalls_path: Path) -> str:
    """'; the stall probe ... in N of them' where its record and the first issue's time are kept."""
    if timeline.first_issue_ns is None or not stalls_path.is_file():
        return ""
    try:
        record = read_stall_record(stalls_path)
    except HarnessError as error:
        return f"; {error}"
    width, origin = timeline.bin_width_ns, timeline.first_issue_ns
    held = sum(1 for i in dips if record.late_within(origin + i * width, origin + (i + 1) * width))
    return f"; the stall probe (a process beside the run) was held up in {held} of them"


def _tenths_ms(timeline: Timeline) -> list[float]:
    """The mean latency (ms) of the samples completed in each tenth of the run's busy bins."""
    busy = [
        (count, mean)
        for count, mean in zip(timeline.completed, timeline.latency_mean_ns, strict=True)
        if count and mean is not None
    ]
    tenths = []
    for part in range(10):
        chosen = busy[part * len(busy) // 10 : (part + 1) * len(busy) // 10]
        if chosen:
            samples = sum(count for count, _ in chosen)
            tenths.append(sum(count * mean for count, mean in chosen) / samples / MS)
    return tenths


def _drift_lines(directory: Path, runs: dict[str, dict[str, Any]]) -> list[str]:
    """For each SingleStream and MultiStream run with a timeline: its mean latency in each tenth of
    the run, and the harness's own p90 and p99 (a sample from the batch source receiving it to its
    completion) beside LoadGen's. Latency that moves between tenths is the host or the GPU changing
    speed for a second or more; the harness's own percentiles short of LoadGen's by little say
    LoadGen's issue and completion add little."""
    lines = []
    for label, run, timeline in _timelines(directory, runs, ("SingleStream", "MultiStream")):
        if isinstance(timeline, str):
            lines.append(timeline)
            continue
        tenths = _tenths_ms(timeline)
        if not tenths or not timeline.histogram:
            continue
        ours, theirs = timeline.percentiles_ns(), run["latency_ns"]
        spread = 100 * (max(tenths) / min(tenths) - 1)
        percentiles = ", ".join(
            f"{name} {ours[name] / MS:.3f} / {theirs[name] / MS:.3f}"
            for name in ("p90", "p99")
            if name in theirs
        )
        lines.append(
            f"{label}: {' '.join(f'{tenth:.3f}' for tenth in tenths)} ms (spread "
            f"{spread:.1f}%); harness / LoadGen {percentiles} ms"
        )
    header = "mean latency in each tenth of the run; the harness's own percentiles and LoadGen's"
    return [header, *lines] if lines else []


def _whole_query_lines(directory: Path, offline: float | None) -> list[str]:
    """raw.json's whole query (torch_raw --whole_query_seconds: the engine alone on an Offline
    run's own work, in the run's order), and the Offline run's share of it."""
    raw_file = directory / "raw.json"
    whole = json.loads(raw_file.read_text()).get("whole_query") if raw_file.is_file() else None
    if not whole:
        return []
    share = f"; Offline {100 * offline / whole['samples_per_second']:.1f}% of it" if offline else ""
    return [
        f"raw, the whole query of a {whole['run_seconds']:g} s run ({whole['samples']:,} samples,"
        f" {whole['order']} order): {whole['samples_per_second']:,.0f} samples/s in"
        f" {whole['seconds']:.1f} s{share}"
    ]


def format_table(directory: Path) -> str:
    raw, runs = _load(directory)
    lines = []
    if raw:
        lines.append(
            f"{'raw engine':<34}{'samples/s':>12}{'p50 ms':>11}{'p90 ms':>11}{'p99 ms':>11}"
        )
        for (precision, batch), row in sorted(raw.items()):
            latency = row["latency_ms"]
            lines.append(
                f"{precision + ' b' + str(batch):<34}{row['samples_per_second']:>12,.0f}"
                f"{latency['p50']:>11.3f}{latency['p90']:>11.3f}{latency['p99']:>11.3f}"
            )
    # The Offline run from GPU memory (named offline where a benchmark runs no other).
    offline_run = runs.get("offline_device") or runs.get("offline") or {}
    offline = offline_run.get("samples_per_second")
    lines.append(
        f"{'harness run':<34}{'samples/s':>12}{'p90 ms':>11}{'p99 ms':>11}  {'valid':<8}vs raw"
    )
    for label, run in runs.items():
        if run.get("accuracy"):
            lines.append(f"{label:<34}{_accuracy(run['accuracy'])}")
            continue
        latency = run.get("latency_ns", {})
        lines.append(
            f"{label:<34}{rate(run):>12,.0f}{latency.get('p90', 0) / MS:>11.3f}"
            f"{latency.get('p99', 0) / MS:>11.3f}  {verdict(run):<8}{_compare(run, raw, offline)}"
        )
    stream_series = _stream_series_runs(directory)
    return "\n".join(
        lines
        + _whole_query_lines(directory, offline)
        + search_lines(runs)
        + _series_lines(directory)
        + _stream_series_lines(directory, stream_series)
        + _slow_bins_lines(directory, runs)
        + _drift_lines(directory, {**runs, **stream_series})
    )


def main(argv: Sequence[str] | None = None) -> int:
    return table_main("gpu_table", format_table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
