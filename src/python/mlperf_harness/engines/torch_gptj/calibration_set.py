"""GPT-J's calibration samples as the engine takes them, torch- and tokenizer-free (the GPU hosts'
device checks import it): token ids, with forced output lengths for the real-size stand-in, whose
own seeded prompts are made here (benchmarks/gptj/calibration.py makes the others' from text).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B
from mlperf_harness.engines.torch_gptj.module import REAL_SIZE_SEED
from mlperf_harness.engines.torch_gptj.scale_artifact import artifact_path
from mlperf_harness.engines.torch_gptj.timing_workload import draw_workload
from mlperf_harness.errors import HarnessError

CALIBRATION_COUNT = 16  # the stand-ins' own samples (MLCommons' list has 1,000)
REAL_SIZE_CALIBRATION_SEED = 1_000  # not the run's own draw (a real-size marker's seed)


@dataclass(frozen=True)
class GptjCalibration:
    """The prompts (token ids) the FP8 model decodes while the maxima are recorded."""

    description: str
    prompts: tuple[npt.NDArray[np.int64], ...]
    forced_lengths: tuple[int, ...] | None = None  # new tokens per prompt, EOS never chosen

    def __post_init__(self) -> None:
        if not self.prompts or any(p.ndim != 1 or not p.size for p in self.prompts):
            raise HarnessError(f"{self.description}: no prompts, or an empty one, to calibrate on")
        if self.forced_lengths is not None and len(self.forced_lengths) != len(self.prompts):
            raise HarnessError(f"{self.description}: a forced length per prompt is needed")

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for index, prompt in enumerate(self.prompts):
            digest.update(np.ascontiguousarray(prompt, np.int64).tobytes() + b"|")
            if self.forced_lengths is not None:
                digest.update(f"forced {self.forced_lengths[index]}|".encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class StaticScalesPlan:
    """What a run with static activation scales needs: the model's identity, the samples and the
    artifact's directory (the engine cache's)."""

    model_id: str
    calibration: GptjCalibration
    engine_root: Path

    @property
    def path(self) -> Path:
        return artifact_path(self.engine_root, self.model_id, self.calibration.sha256)


def real_size_calibration() -> GptjCalibration:
    workload = draw_workload(CALIBRATION_COUNT, REAL_SIZE_CALIBRATION_SEED)
    return GptjCalibration(
        f"the real-size stand-in's own {CALIBRATION_COUNT} seeded prompts "
        f"(seed {REAL_SIZE_CALIBRATION_SEED}, forced output lengths)",
        tuple(workload.prompts(GPTJ_6B.vocab_size)),
        tuple(int(n) for n in workload.output_lengths),
    )


def real_size_identity() -> str:
    return f"real-size:{GPTJ_6B}:seed{REAL_SIZE_SEED}"
