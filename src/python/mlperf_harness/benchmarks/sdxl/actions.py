"""SDXL's workflow actions before a run: download_model, download_data, preprocess_data.

Each is an entry point of its own (a pex_binary in benchmarks/sdxl/BUILD) with the run's flag names
and default paths (resources.py). SDXL's checkpoint, COCO's captions, the fixed latents, the FID
statistics and the metric weights are published by Stability AI, MLCommons, pytorch-fid and
open_clip; none is reachable from this workplace, so download_model and download_data check what is
in place and say, one line per missing file, what it is and where it goes.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlperf_harness.accuracy.t2i_weights import metric_weight_files
from mlperf_harness.benchmarks.action_cli import action_parser, run_action
from mlperf_harness.benchmarks.data_actions import main_check_data
from mlperf_harness.benchmarks.sdxl import resources
from mlperf_harness.datasets import coco_t2i
from mlperf_harness.errors import HarnessError

CHECKPOINT = (
    "stabilityai/stable-diffusion-xl-base-1.0 (Hugging Face; MLCommons' text_to_image README)"
)


def main_download_model(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_model: check SDXL's model and the metrics' weights where the run looks for them."""
    parser = action_parser(
        "download_model",
        "Check that SDXL's model (the diffusers checkpoint for GPUs, or this harness's ONNX "
        "pipeline for the CPU) and the accuracy metrics' weights are in place.",
    )
    parser.add_argument("--model_path", type=Path, help="the model directory to check")

    def action(args: argparse.Namespace, scratch: Path) -> None:
        checkpoint = args.model_path or resources.default_checkpoint_dir(scratch)
        onnx_dir = resources.default_model_dir(scratch)
        problems = []
        if (checkpoint / "unet").is_dir() or args.model_path is not None:
            for part in ("unet", "vae", "text_encoder", "text_encoder_2", *resources.MERGES):
                if not (checkpoint / part).exists():
                    problems.append(f"{checkpoint / part} missing")
            print(f"download_model: SDXL checkpoint {checkpoint}")
        elif onnx_dir.is_dir():
            resources.check_model_dir(onnx_dir)
            print(f"download_model: SDXL ONNX pipeline {onnx_dir}")
        else:
            problems.append(f"no SDXL model: put {CHECKPOINT} in {checkpoint}")
        try:
            files = metric_weight_files(resources.default_metrics_dir(scratch))
            print(f"download_model: metric weights {files.inception}, {files.clip}")
        except HarnessError as error:
            problems.append(str(error))
        if problems:
            raise HarnessError("; ".join(problems))

    return run_action(parser, action, argv, environ)


def main_download_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """download_data: check the captions, the latents and the FID statistics."""
    return main_check_data(
        argv,
        environ,
        "Check that the data directory holds the reference's 5,000 COCO 2014 captions "
        "(captions/captions.tsv), the fixed latents (latents/latents.npy or .pt) and the FID "
        "statistics (val2014.npz).",
        _add_data_dir_flag,
        resources.default_data_dir,
        _check_data,
    )


def main_preprocess_data(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] = os.environ
) -> int:
    """preprocess_data: the tokenised captions the run reads, unless they are up to date."""
    parser = action_parser(
        "preprocess_data",
        "Tokenise the captions with SDXL's two tokenizers (input_ids.npy, [N, 2, 77]) into the "
        "directory the run uses.",
    )
    _add_data_dir_flag(parser)
    parser.add_argument("--model_path", type=Path, help="the model directory (its tokenizers)")
    parser.add_argument("--preprocessed_dir", type=Path, help="where input_ids.npy goes")

    def action(args: argparse.Namespace, scratch: Path) -> None:
        files = resources.choose(args.model_path, args.data_dir, scratch)
        output = args.preprocessed_dir or resources.default_preprocessed_dir(
            scratch, files.captions
        )
        done = coco_t2i.preprocess(files.captions, files.merges, output, files.expected_captions)
        print(f"preprocess_data: {len(done.input_ids)} captions tokenised in {output}")

    return run_action(parser, action, argv, environ)


def _check_data(directory: Path) -> str:
    captions = coco_t2i.read_captions(
        coco_t2i.captions_file(directory), coco_t2i.REFERENCE_CAPTIONS
    )
    latents = coco_t2i.read_latents(coco_t2i.latents_file(directory))
    statistics = directory / resources.STATISTICS_FILE
    if not statistics.is_file():
        raise HarnessError(
            f"the FID statistics are missing: {statistics} (MLCommons' text_to_image/tools/"
            "val2014.npz)"
        )
    return (
        f"{directory}: {len(captions)} captions, latents {list(latents.shape)}, FID statistics "
        "present"
    )


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help="the reference's text_to_image data layout (default: <scratch>/data/coco2014)",
    )
