"""ResNet-50's own action flags: the ImageNet data directory with the run's default
(resources.default_data_dir), and comma-separated names. The machinery every benchmark's actions
share (the parser, --no_progress, how an action ends) is in benchmarks/action_cli.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlperf_harness.benchmarks.resnet50.resources import default_data_dir


def add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help="the ImageNet validation set: <data_dir>/imagenet/val_map.txt and the images beside "
        "it, or <data_dir>/val_map.txt (default: <scratch>/data)",
    )


def comma_list(text: str) -> tuple[str, ...]:
    # Names are checked by preprocess_data, which owns the list of formats.
    formats = tuple(part.strip() for part in text.split(","))
    if not all(formats):
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return formats


def data_dir(args: argparse.Namespace, scratch: Path) -> Path:
    chosen: Path = args.data_dir or default_data_dir(scratch)
    return chosen
