"""Checks the ImageNet 2012 validation layout under a data directory, as NVIDIA's tooling expects.

    <data_dir>/imagenet/ILSVRC2012_val_00000001.JPEG ... ILSVRC2012_val_00050000.JPEG
    <data_dir>/imagenet/val_map.txt      one "<file> <label>" line per image, in MLPerf's order

val_map.txt directly in the given directory is accepted too, and so is any smaller set in the same
format (a generated set, a subset): the result says how many entries it has and whether it is the
full validation set. The images cannot be downloaded for the user (a person must accept the
ImageNet license), so every failure says what is missing and where to get it, on one line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError

IMAGENET_SUBDIR = "imagenet"
VAL_MAP_NAME = "val_map.txt"
FULL_VAL_COUNT = 50_000
_FULL_NAME = re.compile(r"ILSVRC2012_val_(\d{8})\.JPEG")
# Missing names an error shows: enough to spot a pattern, few enough for one line.
_SHOW_MISSING = 3

WHERE_TO_GET = (
    "get ILSVRC2012_img_val.tar from https://image-net.org (after accepting its license; it "
    "cannot be downloaded automatically) and extract it there, with MLCommons' val_map.txt beside "
    "the images (e.g. closed/NVIDIA/data_maps/imagenet/val_map.txt in "
    "github.com/mlcommons/inference_results_v0.5)"
)


@dataclass(frozen=True)
class ValSet:
    """A checked validation set: where its images are and its val_map entries in order."""

    image_dir: Path
    entries: list[tuple[str, int]]

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def is_full(self) -> bool:
        """True for the complete ImageNet 2012 validation set (all 50,000 files)."""
        return is_full_val_map(self.entries)

    def describe(self) -> str:
        if self.is_full:
            return f"ImageNet 2012 validation set: {len(self)} images in {self.image_dir}"
        return (
            f"partial image set: {len(self)} images in {self.image_dir} (not the full "
            f"{FULL_VAL_COUNT:,}-image ImageNet validation set: no valid MLPerf accuracy result)"
        )


def is_full_val_map(entries: list[tuple[str, int]]) -> bool:
    """Whether entries name exactly the 50,000 official validation files, each once."""
    if len(entries) != FULL_VAL_COUNT:
        return False
    numbers = set()
    for name, _label in entries:
        match = _FULL_NAME.fullmatch(name)
        if match is None:
            return False
        numbers.add(int(match.group(1)))
    return numbers == set(range(1, FULL_VAL_COUNT + 1))


def find_val_map(data_dir: Path) -> Path:
    """The val_map.txt to use: <data_dir>/imagenet/val_map.txt, else <data_dir>/val_map.txt."""
    if not data_dir.is_dir():
        raise HarnessError(
            f"no ImageNet data: {data_dir} does not exist; create {data_dir / IMAGENET_SUBDIR} and "
            f"{WHERE_TO_GET}"
        )
    image_dir = data_dir / IMAGENET_SUBDIR
    for candidate in (image_dir / VAL_MAP_NAME, data_dir / VAL_MAP_NAME):
        if candidate.is_file():
            return candidate
    where = image_dir if image_dir.is_dir() else data_dir
    jpegs = _count_jpegs(where)
    found = f"{jpegs} JPEG files but no {VAL_MAP_NAME}" if jpegs else "no val_map.txt, no images"
    raise HarnessError(
        f"ImageNet layout incomplete: {where} has {found} (looked for {image_dir / VAL_MAP_NAME} "
        f"and {data_dir / VAL_MAP_NAME}); {WHERE_TO_GET}"
    )


def parse_val_map(path: Path) -> list[tuple[str, int]]:
    """Parse "<file> <label>" lines (any whitespace; blank lines skipped) into an ordered list."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"cannot read {path}: {err}") from err
    entries: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        bad = f"malformed {path} line {line_no}:"
        if len(fields) != 2:
            raise HarnessError(f'{bad} expected "<file> <label>", got {line.strip()!r}')
        name, label_text = fields
        # Plain names only: output files are named after them; a path could leave the output dir.
        if "/" in name or "\\" in name or name in (".", ".."):
            raise HarnessError(f"{bad} {name!r} must be a file name, not a path")
        if not label_text.isdigit():
            raise HarnessError(f"{bad} label {label_text!r} is not a non-negative integer")
        if name in seen:
            raise HarnessError(f"{bad} {name} is already listed on line {seen[name]}")
        seen[name] = line_no
        entries.append((name, int(label_text)))
    if not entries:
        raise HarnessError(f"{path} lists no images; {WHERE_TO_GET}")
    return entries


def check_layout(data_dir: Path) -> ValSet:
    """Find and parse val_map.txt under data_dir and check that every listed image is present."""
    val_map = find_val_map(data_dir)
    entries = parse_val_map(val_map)
    image_dir = val_map.parent
    # One directory listing instead of 50,000 stat() calls: much faster on network file systems.
    present = {entry.name for entry in os.scandir(image_dir) if entry.is_file()}
    missing = [name for name, _label in entries if name not in present]
    if missing:
        shown = ", ".join(missing[:_SHOW_MISSING])
        if len(missing) > _SHOW_MISSING:
            shown += ", ..."
        raise HarnessError(
            f"{len(missing)} of {len(entries)} images listed in {val_map} are missing "
            f"({shown}); {WHERE_TO_GET}"
        )
    return ValSet(image_dir=image_dir, entries=entries)


def _count_jpegs(directory: Path) -> int:
    if not directory.is_dir():
        return 0
    suffixes = (".JPEG", ".JPG")
    return sum(1 for entry in os.scandir(directory) if entry.name.upper().endswith(suffixes))
