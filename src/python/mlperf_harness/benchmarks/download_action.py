"""One published file fetched by a benchmark's download action, and what the action prints about it.

A module of its own rather than part of benchmarks/action_cli.py: entry points that download
nothing (generate_engines) import action_cli, and should not depend on the download code. Also the
whole download_model action of a benchmark whose model is one file.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import (
    action_parser,
    add_mirror_flag,
    add_progress_flag,
    run_action,
)
from mlperf_harness.datasets.model_sources import ModelSource
from mlperf_harness.errors import HarnessError


def fetch_and_report(prog: str, source: ModelSource, dest: Path, *, progress: bool) -> Path:
    """Fetch source to dest (resuming, checksum verified; datasets/download.py) unless it is there
    already, and print one line saying which; HarnessError when it cannot (one line, with where
    to put the file by hand)."""
    # fetch() names the file after the source: a dest of another name renames it.
    source = dataclasses.replace(source, filename=dest.name)
    already_there = dest.is_file()
    part = dest.with_name(dest.name + ".part")
    if not already_there and part.is_file():
        print(f"{prog}: resuming from {part.stat().st_size} bytes in {part}")
    path = source.fetch(dest.parent, progress=progress)
    check = checksum_note(source)
    if already_there:
        print(f"{prog}: {path} is already there ({check}); nothing to download")
    else:
        print(f"{prog}: downloaded {source.description} to {path} ({check})")
    return path


def checksum_note(source: ModelSource) -> str:
    # The same preference as ModelSource.fetch: sha256 when published, else md5.
    if source.sha256:
        return "sha256 verified"
    if source.md5:
        return "md5 verified"
    return "not verified: no published checksum"


def checksum_words(source: ModelSource) -> str:
    """The checksum a file fetched by hand must have, for an error line ("md5 <hex>")."""
    if source.sha256:
        return f"sha256 {source.sha256}"
    if source.md5:
        return f"md5 {source.md5}"
    return "no published checksum"


def main_download_one_model(
    argv: Sequence[str] | None,
    environ: Mapping[str, str],
    source: ModelSource,
    default_model_path: Callable[[Path], Path],
    default_words: str,
) -> int:
    """A benchmark's download_model action for a model of one file (ResNet-50, 3D-UNet): fetch
    `source` to --model_path (default `default_model_path(scratch)`, described to the user as
    `default_words`), resumable and checksum-verified where a checksum is published."""
    verified = " and verify its checksum" if source.sha256 or source.md5 else ""
    parser = action_parser("download_model", f"Download {source.description}{verified}.")
    parser.add_argument(
        "--model_path",
        type=Path,
        help=f"where to put the model file (default: {default_words})",
    )
    add_mirror_flag(parser, "--url", source.url)
    add_progress_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        dest: Path = args.model_path or default_model_path(scratch)
        if dest.is_dir():
            # Caught before the download: otherwise the final rename would fail after the bytes.
            raise HarnessError(f"--model_path {dest} is a directory; give the model file's path")
        fetch_and_report(
            "download_model",
            dataclasses.replace(source, url=args.url),
            dest,
            progress=args.progress,
        )

    return run_action(parser, action, argv, environ)
