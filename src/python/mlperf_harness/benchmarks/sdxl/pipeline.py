"""SDXL's text-to-image loop on ONNX Runtime (the CPU path): a sample's two token rows in, its
image as uint8 [H, W, 3] out, as MLCommons' reference (`backend_pytorch.py` over diffusers'
StableDiffusionXLPipeline, then `coco.py`'s postprocessing) makes it:

1. both text encoders on the prompts and, once, on the reference's negative prompt; the UNet's text
   is the two encoders' penultimate hidden states side by side, its pooled text the second's;
2. the fixed initial latents (one tensor for every sample) times init_noise_sigma;
3. 20 Euler steps (scheduler.py), each ONE UNet call on [negative; positive] rows: classifier-free
   guidance with scale 8 batched, with the size conditioning (H, W, 0, 0, H, W);
4. the VAE decoder on latents / 0.13025, then (x / 2 + 0.5) clipped to [0, 1], HWC, x 255, rounded.

A batch of samples runs as one: every step's UNet call holds 2N rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.onnxruntime.session import cpu_session
from mlperf_harness.benchmarks.sdxl import stand_in_model as parts
from mlperf_harness.benchmarks.sdxl.scheduler import GUIDANCE, STEPS, euler_schedule, guided
from mlperf_harness.errors import HarnessError

# The reference's negative prompt (text_to_image/backend_pytorch.py).
NEGATIVE_PROMPT = "normal quality, low quality, worst quality, low res, blurry, nsfw, nude"
MODEL_FILES = ("text_encoder.onnx", "text_encoder_2.onnx", "unet.onnx", "vae_decoder.onnx")
TOKENS = parts.CONTEXT  # per tokenizer: a sample's row is 2 x 77 ids


@dataclass(frozen=True)
class PipelineInputs:
    """What every sample shares: the fixed latents [1, 4, h, w] and the negative prompt's rows."""

    latents: npt.NDArray[np.float32]
    negative: npt.NDArray[np.int64]  # [2, 77]: tokenizer 1's row, tokenizer 2's
    vae_scaling_factor: float = 0.13025


def to_uint8_images(decoded: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    """The VAE's [N, 3, H, W] -> [N, H, W, 3] uint8, as the reference rounds it."""
    unit = np.clip(decoded / np.float32(2) + np.float32(0.5), 0.0, 1.0)
    scaled = unit.transpose(0, 2, 3, 1).astype(np.float32) * np.float32(255)
    images: npt.NDArray[np.uint8] = np.round(scaled).astype(np.uint8)
    return images


class OnnxPipeline:
    def __init__(
        self,
        model_dir: Path,
        inputs: PipelineInputs,
        intra_op_threads: int | None = None,
        steps: int = STEPS,
        guidance: float = GUIDANCE,
    ) -> None:
        self._paths = [model_dir / name for name in MODEL_FILES]
        missing = [str(p) for p in self._paths if not p.is_file()]
        if missing:
            raise HarnessError(
                f"{model_dir} is not an SDXL ONNX pipeline here: missing {', '.join(missing)}"
            )
        self._inputs = inputs
        self._threads = intra_op_threads
        self._schedule = euler_schedule(steps)
        self._guidance = guidance
        self._sessions: list[Any] = []
        self._negative: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None = None

    def load(self) -> None:
        self._sessions = [cpu_session(path, self._threads) for path in self._paths]
        self._negative = self.encode(self._inputs.negative[None])

    def unload(self) -> None:
        self._sessions = []

    def encode(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """[N, 2, 77] token rows -> the UNet's text [N, 77, D1 + D2] and pooled text [N, P]."""
        first, second = self._sessions[0], self._sessions[1]
        h1, _ = first.run(None, {parts.INPUT_IDS: np.ascontiguousarray(rows[:, 0])})
        h2, pooled = second.run(None, {parts.INPUT_IDS: np.ascontiguousarray(rows[:, 1])})
        return np.concatenate([h1, h2], axis=-1), pooled

    def generate(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        """[N, 2, 77] token rows -> [N, H, W, 3] uint8 images."""
        if self._negative is None:
            raise HarnessError("the SDXL pipeline was used before it was loaded")
        n = len(rows)
        text, pooled = self.encode(rows)
        neg_text, neg_pooled = self._negative
        text = np.concatenate([np.repeat(neg_text, n, 0), text]).astype(np.float32)
        pooled = np.concatenate([np.repeat(neg_pooled, n, 0), pooled]).astype(np.float32)
        schedule = self._schedule
        latents = np.repeat(self._inputs.latents, n, axis=0).astype(np.float32)
        latents = (latents * np.float32(schedule.init_noise_sigma)).astype(np.float32)
        size = float(latents.shape[-1] * 8)
        time_ids = np.tile(np.array([size, size, 0, 0, size, size], np.float32), (2 * n, 1))
        unet = self._sessions[2]
        for step, t in enumerate(schedule.timesteps):
            doubled = np.concatenate([latents, latents])
            (noise,) = unet.run(
                None,
                {
                    parts.SAMPLE: schedule.scale_input(doubled, step),
                    parts.TIMESTEP: np.full(2 * n, t, np.float32),
                    parts.TEXT: text,
                    parts.TEXT_EMBEDS: pooled,
                    parts.TIME_IDS: time_ids,
                },
            )
            latents = schedule.step(guided(noise, self._guidance), step, latents)
        scaled = (latents / np.float32(self._inputs.vae_scaling_factor)).astype(np.float32)
        (decoded,) = self._sessions[3].run(None, {parts.LATENT: scaled})
        return to_uint8_images(decoded)


def pack_rows(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """[N, 2, 77] -> the sample store's [N, 154] rows."""
    return rows.reshape(len(rows), 2 * TOKENS)


def unpack_rows(batch: npt.NDArray[np.generic]) -> npt.NDArray[np.int64]:
    return np.asarray(batch, dtype=np.int64).reshape(len(batch), 2, TOKENS)


class PipelineRunner(Runner):
    """A batch of samples (packed token rows) in, each sample's image bytes out: the whole 20-step
    loop is one `infer` call. One runner shared by the harness's workers would serialise on its
    sessions' threads anyway: ONNX Runtime spreads each call over every core."""

    name = "onnxruntime"

    def __init__(self, pipeline: OnnxPipeline) -> None:
        self._pipeline = pipeline

    def activate(self) -> None:
        self._pipeline.load()

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        images = self._pipeline.generate(unpack_rows(batch))
        return images.reshape(len(images), -1)

    def deactivate(self) -> None:
        self._pipeline.unload()


def pipeline_runners(
    backend: str,
    options: Any,
    *,
    model_dir: Path,
    inputs: PipelineInputs,
    precision: str = "fp16",
    record: dict[str, str] | None = None,
) -> list[Runner]:
    """BackendOptions.runner_factory of SDXL's runs: the ONNX pipeline on the CPU, the torch
    engine (gpu_pipeline.py) on GPUs, its UNet in `precision` (fp16 or fp8, checked by the run
    before: unet_fp8.py) and `record` (the run's provenance) told how it ran, nothing computed on
    the null backend."""
    workers = options.worker_count or 1
    if backend == "null":
        from mlperf_harness.backends.null.runner import NullRunner

        return [NullRunner()] * workers
    if backend == "onnxruntime":
        runner = PipelineRunner(OnnxPipeline(model_dir, inputs, options.intra_op_threads))
        return [runner] * workers
    if backend == "torch":
        from mlperf_harness.benchmarks.sdxl.gpu_pipeline import torch_pipeline_runners

        return torch_pipeline_runners(
            options, model_dir=model_dir, inputs=inputs, precision=precision, record=record
        )
    raise HarnessError(f"SDXL runs on onnxruntime (CPU), torch (GPU) or null, not {backend}")
