"""The inputs of the GPU engine's equality check, made where the stand-in is built (any CPU host):
the small fitted stand-in's ONNX graph (the CPU engine's model) and held-out prompts encoded by
its tokenizer, so that the GPU host only decodes.

`python -m mlperf_harness.engines.torch_gptj.check_inputs --out DIR [--prompts N]` writes
DIR/model.onnx and DIR/prompts.npz (prompt i as `prompt_<i>`, the EOS id as `eos_id`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from mlperf_harness.atomic import staging_directory
from mlperf_harness.benchmarks.gptj.build_stand_in_model import (
    HELD_OUT_SEED,
    TRAIN_SEED,
    VOCAB_SIZE,
    build_stand_in_gptj,
    response_text,
)
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples
from mlperf_harness.datasets.cnn_dailymail.tokenizer import train_tokenizer
from mlperf_harness.engines.torch_gptj.device_check import MODEL_FILE, PROMPTS_FILE


def write_check_inputs(out_dir: Path, prompts: int, train_count: int = 150) -> None:
    train = generate_samples(train_count, seed=TRAIN_SEED)
    with tempfile.TemporaryDirectory() as directory:
        texts = [s.prompt() for s in train] + [response_text(s) for s in train]
        tokenizer = train_tokenizer(texts, Path(directory), vocab_size=VOCAB_SIZE)
    stand_in = build_stand_in_gptj(train, tokenizer)
    held_out = generate_samples(prompts, seed=HELD_OUT_SEED)
    encoded = {
        f"prompt_{i}": np.array(tokenizer.encode(s.prompt()), np.int64)
        for i, s in enumerate(held_out)
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_directory(out_dir.parent, f".{out_dir.name}.")
    (staging / MODEL_FILE).write_bytes(stand_in.serialized())
    np.savez(staging / PROMPTS_FILE, eos_id=np.int64(tokenizer.eos_id), **encoded)
    if out_dir.exists():
        for child in out_dir.iterdir():
            child.unlink()
        out_dir.rmdir()
    os.replace(staging, out_dir)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="check_inputs", description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prompts", type=positive_int, default=16)

    def body() -> int:
        args = parser.parse_args(argv)
        write_check_inputs(args.out, args.prompts)
        print(f"check_inputs: {args.out}", file=sys.stderr)
        return 0

    return run_entry_point("check_inputs", body)


if __name__ == "__main__":
    sys.exit(main())
