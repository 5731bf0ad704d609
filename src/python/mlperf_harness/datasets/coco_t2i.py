"""SDXL's data in MLCommons' text_to_image layout: the COCO 2014 captions and the fixed latents.

A data directory holds `captions/captions.tsv` (the reference's `captions_source.tsv` under either
name: tab-separated, a header naming at least `id` and `caption`; sample i is row i, as
`accuracy_coco.py` reads it with `df.iloc[i]`) and `latents/latents.npy` or `latents/latents.pt`
(one [1, 4, h, w] float32 tensor that every sample starts from, `tools/latents.npy` /
`tools/latents.pt` of the reference). `preprocess` tokenises the captions with SDXL's two
tokenizers into `input_ids.npy` [N, 2, 77] int64, with a manifest of what it was made from.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic, write_json_atomic
from mlperf_harness.datasets.clip_bpe import ClipTokenizer
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256
from mlperf_harness.torch_file import load_torch_file

CAPTION_FILES = ("captions/captions.tsv", "captions/captions_source.tsv")
LATENT_FILES = ("latents/latents.npy", "latents/latents.pt")
REFERENCE_CAPTIONS = 5000  # the reference's COCO 2014 validation captions
TOKENS_FILE, MANIFEST_FILE = "input_ids.npy", "manifest.json"
# SDXL's tokenizer pads with its end token; tokenizer_2 (and open_clip) with "!", id 0.
PAD_SECOND = 0


@dataclass(frozen=True)
class Caption:
    id: int
    caption: str


def find_file(data_dir: Path, candidates: tuple[str, ...], what: str, how: str) -> Path:
    for name in candidates:
        if (data_dir / name).is_file():
            return data_dir / name
    raise HarnessError(
        f"{what} not found: put {' or '.join(str(data_dir / n) for n in candidates)} in place "
        f"({how})"
    )


def captions_file(data_dir: Path) -> Path:
    return find_file(
        data_dir,
        CAPTION_FILES,
        "the COCO captions",
        "MLCommons' text_to_image/coco2014/captions/captions_source.tsv",
    )


def latents_file(data_dir: Path) -> Path:
    return find_file(
        data_dir, LATENT_FILES, "the fixed latents", "MLCommons' text_to_image/tools/latents.npy"
    )


def read_captions(path: Path, expected: int | None = None) -> list[Caption]:
    """Sample i's caption is row i. `expected`: the count the data must hold (one line if not)."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise HarnessError(f"cannot read captions {path}: {error}") from error
    if rows and not {"id", "caption"} <= set(rows[0]):
        raise HarnessError(
            f"{path} has no 'id' and 'caption' columns (its header: {', '.join(rows[0])})"
        )
    captions = []
    for number, row in enumerate(rows, start=2):
        try:
            captions.append(Caption(int(row["id"]), str(row["caption"])))
        except (TypeError, ValueError) as error:
            raise HarnessError(
                f"{path} line {number}: id {row.get('id')!r} is not a number"
            ) from error
    if not captions:
        raise HarnessError(f"{path} holds no captions")
    if expected is not None and len(captions) != expected:
        raise HarnessError(
            f"{path} holds {len(captions)} captions where {expected} are expected (the "
            "reference's COCO 2014 list): a caption list of another length would score other images"
        )
    return captions


def write_captions(path: Path, captions: list[Caption]) -> None:
    lines = ["id\tcaption"] + [f"{c.id}\t{c.caption}" for c in captions]
    write_bytes_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))


def read_latents(path: Path) -> npt.NDArray[np.float32]:
    """The fixed initial latents [1, 4, h, w] from a .npy or a torch .pt file."""
    if not path.is_file():
        raise HarnessError(
            f"the fixed latents are missing: {path} (MLCommons' text_to_image/tools/latents.npy)"
        )
    try:
        array = np.load(path) if path.suffix == ".npy" else load_torch_file(path)
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot read the latents {path}: {error}") from error
    if not isinstance(array, np.ndarray) or array.ndim != 4 or array.shape[:2] != (1, 4):
        shape = getattr(array, "shape", type(array).__name__)
        raise HarnessError(f"{path} is not one [1, 4, h, w] latent tensor: {shape}")
    return np.ascontiguousarray(array, dtype=np.float32)


def token_rows(
    captions: list[str], first: ClipTokenizer, second: ClipTokenizer
) -> npt.NDArray[np.int64]:
    """[N, 2, 77]: each caption through SDXL's tokenizer and tokenizer_2 (padding as each pads)."""
    rows = np.empty((len(captions), 2, 77), np.int64)
    for i, text in enumerate(captions):
        rows[i, 0] = first.row(text, pad_id=first.end_id)
        rows[i, 1] = second.row(text, pad_id=PAD_SECOND)
    return rows


@dataclass(frozen=True)
class Preprocessed:
    directory: Path
    input_ids: npt.NDArray[np.int64]  # [N, 2, 77]


def preprocess(
    captions_path: Path,
    merges: tuple[Path, Path],
    output_dir: Path,
    expected: int | None = None,
) -> Preprocessed:
    """Tokenised captions in output_dir, made unless the manifest says they are of these files."""
    key = {
        "captions_sha256": file_sha256(captions_path),
        "merges_sha256": [file_sha256(path) for path in merges],
    }
    manifest_path, tokens_path = output_dir / MANIFEST_FILE, output_dir / TOKENS_FILE
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = None
    if manifest is not None and manifest.get("key") == key and tokens_path.is_file():
        return Preprocessed(output_dir, np.load(tokens_path))
    from mlperf_harness.datasets.clip_bpe import read_merges

    captions = read_captions(captions_path, expected)
    first, second = (ClipTokenizer(read_merges(path)) for path in merges)
    rows = token_rows([c.caption for c in captions], first, second)
    buffer = npy_bytes(rows)
    write_bytes_atomic(tokens_path, buffer)
    write_json_atomic(
        manifest_path, {"key": key, "samples": len(rows), "captions": str(captions_path)}
    )
    return Preprocessed(output_dir, rows)


def npy_bytes(array: npt.NDArray[np.generic]) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array)
    return stream.getvalue()


def preprocessed_key(captions_path: Path) -> str:
    return hashlib.sha256(str(captions_path.resolve()).encode()).hexdigest()[:12]
