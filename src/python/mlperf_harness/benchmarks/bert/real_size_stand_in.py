"""The real-size stand-in for GPU timing: BERT-Large's shape (24 layers, hidden 1024, 16 heads, FFN
4096; the official model's interface and 1.3 GB of fp32 weights), seeded, answering nothing.

The CPU stand-in is small so that a CPU builds and runs it in about a minute; a GPU's speed on it
says nothing about BERT-Large. This one computes exactly what BERT-Large computes per token, so its
throughput and latency on a GPU are BERT-Large's. Its weights are random (no fit: at this size that
would take hours on a CPU), its span head too, so its answers are noise and it is marked stand-in.
It is written with the CPU stand-in's vocabulary beside it, so that it runs on the generated
questions: `bert.main --model_path <out>/model.onnx`.

`python -m mlperf_harness.benchmarks.bert.real_size_stand_in --out DIR [--scratch_path S]`
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from mlperf_harness.atomic import staging_directory
from mlperf_harness.benchmarks.bert import resources, stand_in
from mlperf_harness.benchmarks.bert.stand_in_model import BERT_LARGE, random_weights, span_model
from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    run_entry_point,
    scratch_path,
)

SEED = 0
SPAN_HEAD_SCALE = 0.05  # seeded span head: logits that differ between tokens (a real argmax)


def build(out_dir: Path, scratch: Path) -> Path:
    """Write `out_dir`/model.onnx and vocab.txt (once; an existing model is kept); return the model."""
    model_path = out_dir / resources.MODEL_FILE_NAME
    if model_path.is_file() and (out_dir / resources.VOCAB_FILE_NAME).is_file():
        return model_path
    started = time.perf_counter()
    vocab = stand_in.ensure_stand_in(scratch).vocab
    weights = random_weights(BERT_LARGE, SEED)
    rng = np.random.default_rng(SEED + 1)
    weights["span/weight"] = rng.standard_normal(
        (BERT_LARGE.hidden, 2), dtype=np.float32
    ) * np.float32(SPAN_HEAD_SCALE)
    model = span_model(weights, BERT_LARGE, SEED, {"mlperf_harness.real_size": "true"})
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_directory(out_dir.parent, f".{out_dir.name}.")
    try:
        onnx.save(model, str(staging / resources.MODEL_FILE_NAME))
        shutil.copyfile(vocab, staging / resources.VOCAB_FILE_NAME)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(
        f"real-size stand-in: {model_path} ({model_path.stat().st_size / 2**30:.2f} GiB) in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    return model_path


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="real_size_stand_in", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="directory for model.onnx and vocab.txt"
    )
    add_scratch_flag(parser)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        print(build(args.out, scratch_path(args.scratch_path, os.environ)))
        return 0

    return run_entry_point("real_size_stand_in", run)


if __name__ == "__main__":
    raise SystemExit(main())
