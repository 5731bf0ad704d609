"""What GPT-J's static FP8 activation scales are calibrated on, for each model a run can take, and
the identity of that model in the artifact's key (engines/torch_gptj/scale_artifact.py):

- MLCommons' checkpoint: MLCommons' calibration set, `cnn_dailymail_calibration.json` (what its
  `prepare-calibration.py` writes from the calibration list's CNN-DailyMail training articles, in
  cnn_eval.json's layout) in the run's data directory, in the reference prompt and tokenized as the
  run's prompts are; its absence is refused in one line saying where to put it. The checkpoint's
  identity is its config, its shard index and each shard's name and size (hashing 24 GB at each
  run's start would take minutes; the download checks every file's md5).
- the stand-in: its own calibration samples, CALIBRATION_COUNT generated articles of another seed
  than its training pairs and its held-out data set (which it is scored on); its identity is the
  stand-in's sha256.
- the real-size stand-in (seeded random weights): its own seeded prompts, a draw of
  CALIBRATION_COUNT CNN-DailyMail-like lengths of another seed than the run's, decoded to their
  forced lengths as its runs are (random weights never choose EOS); its identity is its seed and
  shape. Such scales say nothing of a real model's activations: they time the static form.

`GptjCalibration.sha256` covers the prompts' token ids (and forced lengths): other samples or
another tokenization give another artifact.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.cnn_dailymail.samples import SummarySample, read_dataset
from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples
from mlperf_harness.datasets.cnn_dailymail.tokenizer import PROMPT_MAX_TOKENS, BpeTokenizer
from mlperf_harness.engines.torch_gptj.calibration_set import CALIBRATION_COUNT, GptjCalibration
from mlperf_harness.engines.torch_gptj.checkpoint_files import check_checkpoint
from mlperf_harness.errors import HarnessError

CALIBRATION_FILE_NAME = "cnn_dailymail_calibration.json"  # prepare-calibration.py's output
CALIBRATION_SEED = 2  # the stand-in's generated sets: 0 training, 1 held out (build_stand_in_model)


def _tokenized(
    samples: list[SummarySample], tokenizer: BpeTokenizer
) -> tuple[npt.NDArray[np.int64], ...]:
    return tuple(
        np.array(tokenizer.encode(s.prompt(), PROMPT_MAX_TOKENS), np.int64) for s in samples
    )


def stand_in_calibration(tokenizer: BpeTokenizer) -> GptjCalibration:
    samples = generate_samples(CALIBRATION_COUNT, seed=CALIBRATION_SEED)
    return GptjCalibration(
        f"the stand-in's own {CALIBRATION_COUNT} calibration articles (seed {CALIBRATION_SEED})",
        _tokenized(samples, tokenizer),
    )


def official_calibration(data_dir: Path, tokenizer: BpeTokenizer) -> GptjCalibration:
    path = data_dir / CALIBRATION_FILE_NAME
    if not path.is_file():
        raise HarnessError(
            f"--fp8_activations static calibrates on MLCommons' calibration set: no {path} (make "
            "it with MLCommons' language/gpt-j/prepare-calibration.py and put it there)"
        )
    dataset = read_dataset(path)
    return GptjCalibration(
        f"MLCommons' calibration set {path} ({len(dataset)} articles)",
        _tokenized(list(dataset.samples), tokenizer),
    )


def checkpoint_identity(directory: Path) -> str:
    """The official checkpoint's key: its config, its shard index and each shard's name and
    size."""
    files = check_checkpoint(directory)
    digest = hashlib.sha256()
    for name in ("config.json", "pytorch_model.bin.index.json", "model.safetensors.index.json"):
        if (directory / name).is_file():
            digest.update(name.encode() + b"\0" + (directory / name).read_bytes())
    for shard in files.shards:
        digest.update(f"{shard.name}:{shard.stat().st_size}\0".encode())
    return f"checkpoint:{digest.hexdigest()}"
