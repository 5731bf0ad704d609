"""generate_engines: build (or find cached) the engines a run would use, ahead of time.

Its own entry point, importing only the engine builders and what finds the model and data, so its
PEX (which Pants engine targets run) changes only when those change: editing the harness, the
preprocessing or the native extension rebuilds no engine.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.action_cli import action_parser, run_action
from mlperf_harness.benchmarks.resnet50.action_cli import add_data_dir_flag, comma_list
from mlperf_harness.benchmarks.resnet50.engines import resnet50_engine
from mlperf_harness.benchmarks.resnet50.resources import choose_data, choose_model
from mlperf_harness.cli.parsing import positive_int


def main(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ) -> int:
    """generate_engines: build (or find cached) the engines a run would use, ahead of time."""
    parser = action_parser(
        "generate_engines",
        "Build the engines for the given precisions with the run's own code and cache, so a run "
        "(or a PEX on a host without Pants) finds them ready. Cached engines are not rebuilt.",
    )
    parser.add_argument(
        "--backend",
        default="onnxruntime",
        help="onnxruntime, torch or tensorrt (default: %(default)s)",
    )
    parser.add_argument(
        "--precision",
        dest="precisions",
        type=comma_list,
        default=("fp32", "int8"),
        help="comma-separated precisions (default: fp32,int8)",
    )
    parser.add_argument(
        "--batch_size",
        type=positive_int,
        default=1,
        help="largest batch the engine serves (tensorrt; onnxruntime engines serve any)",
    )
    parser.add_argument("--model_path", type=Path, help="the model (default: as the run finds it)")
    add_data_dir_flag(parser)
    parser.add_argument(
        "--engine_dir", type=Path, help="the engine cache (default: <scratch>/engines)"
    )
    return run_action(parser, _generate_engines, argv, environ)


def _generate_engines(args: argparse.Namespace, scratch: Path) -> None:
    model = choose_model(args.model_path, scratch)
    data = choose_data(args.data_dir, scratch)
    engine_root: Path = args.engine_dir or scratch / "engines"
    for precision in args.precisions:
        path, built = resnet50_engine(
            args.backend, precision, model, data, scratch, engine_root, args.batch_size
        )
        state = "built" if built else "cached (inputs unchanged)"
        print(f"generate_engines: {args.backend} {precision}: {path} [{state}]")


if __name__ == "__main__":
    raise SystemExit(main())
