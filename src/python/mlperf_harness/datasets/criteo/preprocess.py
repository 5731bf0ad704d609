"""Preprocess day 23 of Criteo 1TB into the set DLRM-v2's runs read (store.py): its first half,
as MLCommons' reference takes it (ceil(rows / 2) pairs: 89,137,319), in LoadGen samples of a user's
group of pairs.

Two inputs are accepted, in the data directory:
- MLCommons' materialized multi-hot files (`day_23_dense.npy`, `day_23_sparse_multi_hot.npz` with
  one uncompressed int32 array per table, `day_23_labels.npy`): taken as they are, each index
  checked against its table;
- the raw day file `day_23` (tab-separated: a label, 13 counts, 26 hexadecimal categorical values):
  parsed, its counts logged, its values reduced modulo their tables' rows and made multi-hot by
  transform.py's synthetic step (not the official bags: transform.py says why).

Samples: the reference's trace of group sizes (`dlrm_trace_of_aggregated_samples.txt`, one
`start, end, count` line per sample) where given; else sizes drawn, seeded, from the reference's
quantiles (tools/dist_quantile.txt) as its loader draws them, the last group cut at the set's end.

Tens of gigabytes: the arrays are filled chunk by chunk into memory-mapped files of a hidden
staging directory next to the set, and the chunks already done are recorded there, so that an
interrupted run resumes where it stopped. A bad input (a truncated file, an index beyond its
table) or a full disk is one line, and the staging directory is removed: nothing half-written
remains, and the set appears (renamed into place, its manifest last) only when whole.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.dlrm_v2.stand_in_data import GROUP_SIZE_QUANTILES
from mlperf_harness.benchmarks.dlrm_v2.topology import (
    DENSE_FEATURES,
    INDICES_PER_PAIR,
    MULTI_HOT_SIZES,
    TABLE_ROWS,
    TABLES,
)
from mlperf_harness.datasets.criteo.store import (
    DENSE,
    GROUPS,
    LABELS,
    MANIFEST_NAME,
    SPARSE,
    CriteoPreprocessed,
    Manifest,
    check_indices,
    load_preprocessed,
)
from mlperf_harness.datasets.criteo.transform import dense_features, multi_hot_bags
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled
from mlperf_harness.write_errors import writing

RAW_DAY = "day_23"
MATERIALIZED = ("day_23_dense.npy", "day_23_sparse_multi_hot.npz", "day_23_labels.npy")
TRACE_NAME = "dlrm_trace_of_aggregated_samples.txt"
RAW_FIELDS = 1 + DENSE_FEATURES + TABLES
DAY_23_ROWS = 178_274_637  # the reference's README: the first half is 89,137,319 pairs
CHUNK_PAIRS = 1 << 18
GROUP_SEED = 0
DONE_NAME = "chunks_done.json"


@dataclass(frozen=True)
class PreprocessReport:
    pairs: int
    samples: int
    chunks: int
    resumed_chunks: int
    source: str


def first_half(rows: int) -> int:
    """The reference's validation half of day 23: its first ceil(rows / 2) rows."""
    return (rows + 1) // 2


def drawn_groups(pairs: int, seed: int = GROUP_SEED) -> npt.NDArray[np.int64]:
    """Sample boundaries [0, ..., pairs]: sizes drawn uniformly among the reference's quantiles."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    quantiles = np.array(GROUP_SIZE_QUANTILES, dtype=np.int64)
    expected = pairs // int(quantiles.min()) + 2
    ends = np.cumsum(quantiles[rng.integers(0, len(quantiles), expected)])
    ends = ends[ends < pairs]
    bounds: npt.NDArray[np.int64] = np.concatenate([[0], ends, [pairs]]).astype(np.int64)
    return bounds


def trace_groups(path: Path, pairs: int) -> npt.NDArray[np.int64]:
    """Sample boundaries from the reference's trace file (`start, end, count` per line)."""
    bounds = [0]
    try:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            start, end, count = (int(part) for part in line.split(","))
            if start != bounds[-1] or end - start != count or count <= 0:
                raise HarnessError(
                    f"{path}:{number}: {line.strip()!r} does not follow line {number - 1}"
                )
            bounds.append(end)
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot read the trace {path}: {error}") from error
    if bounds[-1] > pairs:
        raise HarnessError(f"{path} covers {bounds[-1]} pairs; the set has {pairs}")
    return np.array(bounds, dtype=np.int64)


class _Materialized:
    """MLCommons' multi-hot files, memory-mapped."""

    def __init__(self, directory: Path) -> None:
        dense_path, sparse_path, labels_path = (directory / name for name in MATERIALIZED)
        self.dense = _npy(dense_path, np.float32, DENSE_FEATURES)
        self.labels = _npy(labels_path, None, 1)
        rows = len(self.dense)
        if len(self.labels) != rows:
            raise HarnessError(f"{labels_path} has {len(self.labels)} rows; {dense_path} {rows}")
        self.tables = [_npz_member(sparse_path, t, rows) for t in range(TABLES)]
        self.rows = rows

    def chunk(
        self, start: int, stop: int
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
        sparse = np.concatenate([table[start:stop] for table in self.tables], axis=1)
        return (
            np.asarray(self.dense[start:stop], dtype=np.float32),
            sparse,
            np.asarray(self.labels[start:stop]).reshape(-1),
        )


def read_npy_header(stream: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """(shape, fortran order, dtype) of the .npy whose header starts at `stream`'s position; the
    stream is left where the data starts."""
    version = np.lib.format.read_magic(stream)  # type: ignore[no-untyped-call]
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = read(stream)  # type: ignore[no-untyped-call]
    return tuple(shape), bool(fortran), np.dtype(dtype)


def _npy(path: Path, dtype: type[np.generic] | None, width: int) -> npt.NDArray[Any]:
    try:
        array: npt.NDArray[Any] = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as error:
        raise HarnessError(
            f"{path}: cannot read it ({error}): a truncated or damaged file; download it again"
        ) from error
    if array.ndim != 2 or array.shape[1] != width or (dtype is not None and array.dtype != dtype):
        raise HarnessError(f"{path} is {array.dtype} {array.shape}, not [rows, {width}]")
    return array


def _npz_member(path: Path, table: int, rows: int) -> npt.NDArray[Any]:
    """Table `table`'s [rows, MULTI_HOT_SIZES[t]] int32 array in an uncompressed .npz, mapped."""
    name = f"{table}.npy"
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(name)
            if info.compress_type != zipfile.ZIP_STORED:
                raise HarnessError(f"{path}: {name} is compressed; the reference's files are not")
            with archive.open(info) as member:
                shape, fortran, dtype = read_npy_header(member)
                header = member.tell()
        with path.open("rb") as raw:
            raw.seek(info.header_offset + 26)
            name_length, extra_length = np.frombuffer(raw.read(4), dtype="<u2")
        offset = info.header_offset + 30 + int(name_length) + int(extra_length) + header
        want = (rows, MULTI_HOT_SIZES[table])
        if tuple(shape) != want or dtype != np.int32 or fortran:
            raise HarnessError(f"{path}: {name} is {dtype} {shape}, not int32 {want}")
        if offset + rows * want[1] * 4 > path.stat().st_size:
            raise HarnessError(f"{path} is truncated: {name} ends past the file's end")
        return np.memmap(path, dtype=np.int32, mode="r", offset=offset, shape=want)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise HarnessError(
            f"{path}: cannot read table {table} ({error}): a truncated or damaged file"
        ) from error


def count_lines(path: Path) -> int:
    lines = 0
    with path.open("rb") as day:
        while block := day.read(1 << 24):
            lines += block.count(b"\n")
    return lines


def parse_raw_lines(
    lines: Sequence[bytes], first_line: int, path: Path, table_rows: Sequence[int]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
    """(dense, sparse multi-hot, labels) of raw day-file lines, one line naming the first bad one."""
    count = len(lines)
    labels = np.empty(count, dtype=np.uint8)
    counts = np.zeros((count, DENSE_FEATURES), dtype=np.int64)
    categorical = np.zeros((count, TABLES), dtype=np.int64)
    rows = np.array(table_rows, dtype=np.int64)
    for i, line in enumerate(lines):
        fields = line.rstrip(b"\n").split(b"\t")
        if len(fields) != RAW_FIELDS:
            raise HarnessError(
                f"{path}:{first_line + i}: {len(fields)} fields, not {RAW_FIELDS}: "
                "the file is truncated or not a Criteo day file"
            )
        try:
            labels[i] = int(fields[0])
            for j in range(DENSE_FEATURES):
                value = fields[1 + j]
                counts[i, j] = int(value) if value else 0
            for j in range(TABLES):
                value = fields[1 + DENSE_FEATURES + j]
                categorical[i, j] = int(value, 16) if value else 0
        except ValueError as error:
            raise HarnessError(f"{path}:{first_line + i}: {error}") from None
    categorical %= rows[None, :]
    return dense_features(counts), multi_hot_bags(categorical, table_rows), labels


class _RawDay:
    def __init__(self, path: Path, table_rows: Sequence[int]) -> None:
        self.path = path
        self.table_rows = table_rows
        self.rows = count_lines(path)
        if path.stat().st_size and not _ends_with_newline(path):
            raise HarnessError(
                f"{path} is truncated: its last line ({self.rows + 1}) has no end; download it again"
            )
        self._file = path.open("rb")
        self._next_line = 0

    def chunk(
        self, start: int, stop: int
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
        if start < self._next_line:
            self._file.seek(0)
            self._next_line = 0
        while self._next_line < start:  # skip chunks done in an earlier run
            self._file.readline()
            self._next_line += 1
        lines = [self._file.readline() for _ in range(stop - start)]
        self._next_line = stop
        return parse_raw_lines(lines, start + 1, self.path, self.table_rows)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as day:
        day.seek(-1, 2)
        return day.read(1) == b"\n"


def find_input(data_dir: Path) -> str:
    """Which input the data directory holds: 'materialized' or 'raw'; one line when neither."""
    if all((data_dir / name).is_file() for name in MATERIALIZED):
        return "materialized"
    if (data_dir / RAW_DAY).is_file():
        return "raw"
    raise HarnessError(
        f"{data_dir} holds neither MLCommons' multi-hot day 23 ({', '.join(MATERIALIZED)}) nor the "
        f"raw {RAW_DAY} of Criteo 1TB: download_data says where each comes from"
    )


def preprocess_day(
    data_dir: Path,
    output_dir: Path,
    *,
    table_rows: Sequence[int] = TABLE_ROWS,
    trace: Path | None = None,
    expected_rows: int | None = DAY_23_ROWS,
    chunk_pairs: int = CHUNK_PAIRS,
    progress: bool = True,
) -> PreprocessReport:
    """The preprocessed set of `data_dir`'s day 23 at `output_dir` (kept when already whole).
    `expected_rows`: the day's rows (None: any; tests use small generated days)."""
    if (output_dir / MANIFEST_NAME).is_file():
        dataset = load_preprocessed(output_dir)
        return PreprocessReport(dataset.manifest.pairs, len(dataset), 0, 0, dataset.manifest.source)
    kind = find_input(data_dir)
    source: _Materialized | _RawDay = (
        _Materialized(data_dir)
        if kind == "materialized"
        else _RawDay(data_dir / RAW_DAY, table_rows)
    )
    if expected_rows is not None and source.rows != expected_rows:
        raise HarnessError(
            f"{data_dir}'s {kind} day 23 has {source.rows} rows; Criteo 1TB's has {expected_rows}: "
            "a truncated or different file"
        )
    pairs = first_half(source.rows)
    groups = trace_groups(trace, pairs) if trace is not None else drawn_groups(pairs)
    pairs = int(groups[-1])  # a trace may cover fewer
    described = f"{kind} day 23 of {data_dir} (first half: {pairs} of {source.rows} pairs)"
    staging = output_dir.parent / f".{output_dir.name}.partial"
    try:
        with writing(staging):
            staging.mkdir(parents=True, exist_ok=True)
            done = _done_chunks(staging, pairs, chunk_pairs)
            arrays = _open_arrays(staging, pairs, fresh=not done)
            chunks = range(0, pairs, chunk_pairs)
            resumed = sum(1 for start in chunks if start in done)
            bar = tqdm(
                total=len(chunks),
                initial=resumed,
                unit="chunk",
                desc="preprocess_data",
                disable=bar_disabled(progress),
            )
            with bar:
                for start in chunks:
                    if start in done:
                        continue
                    stop = min(start + chunk_pairs, pairs)
                    dense, sparse, labels = source.chunk(start, stop)
                    check_indices(sparse, table_rows, f"{described}, pairs from {start}")
                    arrays[DENSE].write(start, dense)
                    arrays[SPARSE].write(start, sparse)
                    arrays[LABELS].write(start, labels)
                    done.add(start)
                    write_json_atomic(
                        staging / DONE_NAME,
                        {"pairs": pairs, "chunk_pairs": chunk_pairs, "done": sorted(done)},
                    )
                    bar.update(1)
            np.save(staging / GROUPS, groups)
            manifest = Manifest(
                pairs,
                len(groups) - 1,
                [int(r) for r in table_rows],
                list(MULTI_HOT_SIZES),
                described,
            )
            (staging / DONE_NAME).unlink()
        write_json_atomic(staging / MANIFEST_NAME, asdict(manifest))
        with writing(output_dir):
            if output_dir.exists():
                shutil.rmtree(output_dir)
            staging.rename(output_dir)
    except HarnessError:
        shutil.rmtree(staging, ignore_errors=True)  # a bad input or a full disk: nothing remains
        raise
    load_preprocessed(output_dir)
    return PreprocessReport(pairs, len(groups) - 1, len(chunks), resumed, described)


def _done_chunks(staging: Path, pairs: int, chunk_pairs: int) -> set[int]:
    try:
        record = json.loads((staging / DONE_NAME).read_text())
    except (OSError, ValueError):
        return set()
    if record.get("pairs") != pairs or record.get("chunk_pairs") != chunk_pairs:
        return set()  # another input or chunking: start over
    if not all((staging / name).is_file() for name in (DENSE, SPARSE, LABELS)):
        return set()
    return {int(start) for start in record.get("done", [])}


class _NpyWriter:
    """One array of the set, written chunk by chunk with plain writes at each chunk's offset (a
    full disk is then an OSError, where a memory-mapped write would kill the process)."""

    def __init__(
        self, path: Path, dtype: type[np.generic], shape: tuple[int, ...], fresh: bool
    ) -> None:
        self.path = path
        self.row_bytes = int(np.dtype(dtype).itemsize * int(np.prod(shape[1:])))
        self.dtype = dtype
        if fresh:
            with path.open("wb") as out:
                header = {
                    "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),  # type: ignore[no-untyped-call]
                    "fortran_order": False,
                    "shape": shape,
                }
                np.lib.format.write_array_header_2_0(out, header)  # type: ignore[no-untyped-call]
                self.data_offset = out.tell()
        else:
            with path.open("rb") as existing:
                read_npy_header(existing)
                self.data_offset = existing.tell()

    def write(self, start: int, values: npt.NDArray[Any]) -> None:
        data = np.ascontiguousarray(values, dtype=self.dtype).tobytes()
        with self.path.open("r+b") as out:
            out.seek(self.data_offset + start * self.row_bytes)
            out.write(data)
            out.flush()


def _open_arrays(staging: Path, pairs: int, *, fresh: bool) -> dict[str, _NpyWriter]:
    shapes: dict[str, tuple[type[np.generic], tuple[int, ...]]] = {
        DENSE: (np.float32, (pairs, DENSE_FEATURES)),
        SPARSE: (np.int32, (pairs, INDICES_PER_PAIR)),
        LABELS: (np.uint8, (pairs,)),
    }
    return {
        name: _NpyWriter(staging / name, dtype, shape, fresh)
        for name, (dtype, shape) in shapes.items()
    }


def preprocessed_or_none(directory: Path) -> CriteoPreprocessed | None:
    return load_preprocessed(directory) if (directory / MANIFEST_NAME).is_file() else None
