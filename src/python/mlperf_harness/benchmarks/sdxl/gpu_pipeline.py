"""SDXL's GPU engine (torch backend): the reference's generation, as pipeline.py does it on the CPU,
with SDXL's own model classes on a CUDA GPU. Written for the lent H100/H200 hosts; NOT RUN in this
workplace (no GPU here): docs/sdxl.md says what was and was not run.

- Models: `diffusers`' UNet2DConditionModel and AutoencoderKL and `transformers`' CLIPTextModel and
  CLIPTextModelWithProjection (the classes SDXL's checkpoint names), from the published checkpoint
  directory (`from_pretrained`, local files only) or, without one, built from SDXL base 1.0's
  configurations (below, as its config.json files give them) with seeded random weights: the real
  size, for timing. The UNet and text encoders run in fp16; the VAE in fp32 (SDXL's VAE config sets
  force_upcast: its fp16 decode overflows), or fp16 with `vae_fp16`. `precision` fp8: the UNet's
  linear layers FP8 (unet_fp8.py), swapped in once at load, before the CUDA graphs are captured.
- The 20-step loop: text encoders once per batch (the negative prompt's embeddings once per
  engine), then per step ONE UNet call on [negative; positive] rows (guidance batched), the Euler
  update in fp32 on the GPU (scheduler.py's sigmas); the UNet call is captured in a CUDA graph per
  batch size (static inputs; every step replays it), so a step costs one launch.
- The VAE decode, (x / 2 + 0.5) clamp, x 255, round and the uint8 cast on the GPU; only the
  image bytes come back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.sdxl.pipeline import PipelineInputs, unpack_rows
from mlperf_harness.benchmarks.sdxl.scheduler import GUIDANCE, STEPS, euler_schedule
from mlperf_harness.benchmarks.sdxl.unet_fp8 import (
    FP8,
    FP16,
    check_precision,
    swap_linears,
)
from mlperf_harness.benchmarks.sdxl.unet_fp8 import provenance as unet_provenance
from mlperf_harness.errors import HarnessError

# SDXL base 1.0's configurations (unet/config.json, vae/config.json, text_encoder*/config.json).
UNET_CONFIG: dict[str, Any] = {
    "sample_size": 128,
    "in_channels": 4,
    "out_channels": 4,
    "flip_sin_to_cos": True,
    "freq_shift": 0,
    "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
    "up_block_types": ("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
    "block_out_channels": (320, 640, 1280),
    "layers_per_block": 2,
    "act_fn": "silu",
    "norm_num_groups": 32,
    "norm_eps": 1e-5,
    "cross_attention_dim": 2048,
    "transformer_layers_per_block": (1, 2, 10),
    "attention_head_dim": (5, 10, 20),
    "use_linear_projection": True,
    "addition_embed_type": "text_time",
    "addition_time_embed_dim": 256,
    "projection_class_embeddings_input_dim": 2816,
}
VAE_CONFIG: dict[str, Any] = {
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ("DownEncoderBlock2D",) * 4,
    "up_block_types": ("UpDecoderBlock2D",) * 4,
    "block_out_channels": (128, 256, 512, 512),
    "layers_per_block": 2,
    "latent_channels": 4,
    "norm_num_groups": 32,
    "sample_size": 1024,
    "scaling_factor": 0.13025,
    "force_upcast": True,
}
TEXT_CONFIGS: tuple[dict[str, Any], dict[str, Any]] = (
    {
        "vocab_size": 49408,
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "max_position_embeddings": 77,
        "hidden_act": "quick_gelu",
        "projection_dim": 768,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "pad_token_id": 1,
    },
    {
        "vocab_size": 49408,
        "hidden_size": 1280,
        "intermediate_size": 5120,
        "num_hidden_layers": 32,
        "num_attention_heads": 20,
        "max_position_embeddings": 77,
        "hidden_act": "gelu",
        "projection_dim": 1280,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "pad_token_id": 1,
    },
)
LATENT_SIZE = 128  # 1024 x 1024 images
SEED = 0


@dataclass(frozen=True)
class GpuOptions:
    device_index: int = 0
    use_cuda_graphs: bool = True
    vae_fp16: bool = False
    steps: int = STEPS
    guidance: float = GUIDANCE
    precision: str = FP16  # the UNet's: fp16 or fp8 (unet_fp8.py)


class SdxlModels:
    """The four networks on one GPU."""

    def __init__(
        self, model_dir: Path | None, device: Any, vae_fp16: bool, precision: str = FP16
    ) -> None:
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
        from diffusers import (  # type: ignore[import-not-found]  # pants: no-infer-dep
            AutoencoderKL,  # pants: no-infer-dep
            UNet2DConditionModel,  # pants: no-infer-dep
        )
        from transformers import (  # type: ignore[import-not-found]  # pants: no-infer-dep
            CLIPTextConfig,  # pants: no-infer-dep
            CLIPTextModel,  # pants: no-infer-dep
            CLIPTextModelWithProjection,  # pants: no-infer-dep
        )

        half = torch.float16
        vae_dtype = half if vae_fp16 else torch.float32
        if model_dir is not None and (model_dir / "unet" / "config.json").is_file():
            # The published checkpoint: every file local (no hub), the layout its configs name.
            def load(cls: Any, sub: str, dtype: Any) -> Any:
                try:
                    return cls.from_pretrained(
                        str(model_dir), subfolder=sub, torch_dtype=dtype, local_files_only=True
                    )
                except (OSError, ValueError) as error:
                    raise HarnessError(
                        f"{model_dir}/{sub} is not SDXL's {sub} ({cls.__name__}): {error}"
                    ) from error

            self.unet = load(UNet2DConditionModel, "unet", half)
            self.vae = load(AutoencoderKL, "vae", vae_dtype)
            self.text1 = load(CLIPTextModel, "text_encoder", half)
            self.text2 = load(CLIPTextModelWithProjection, "text_encoder_2", half)
            self.origin = str(model_dir)
        else:
            torch.manual_seed(SEED)
            with torch.device(device):
                self.unet = UNet2DConditionModel(**UNET_CONFIG).to(half)
                self.vae = AutoencoderKL(**VAE_CONFIG).to(vae_dtype)
                self.text1 = CLIPTextModel(CLIPTextConfig(**TEXT_CONFIGS[0])).to(half)
                self.text2 = CLIPTextModelWithProjection(CLIPTextConfig(**TEXT_CONFIGS[1])).to(half)
            self.origin = f"SDXL base 1.0's configurations, seeded random weights (seed {SEED})"
        for module in (self.unet, self.vae, self.text1, self.text2):
            module.to(device).eval().requires_grad_(False)
        self.scaling_factor = float(self.vae.config.scaling_factor)
        self.precision = check_precision(precision)
        self.fp8_layers: int | None = None  # how many of the UNet's linears are FP8 (fp8 only)
        self.fp8_scaled_mm = False  # whether their products run on torch._scaled_mm
        if self.precision == FP8:
            self.fp8_layers, self.fp8_scaled_mm = swap_linears(torch, self.unet, device)


class TorchSdxlEngine:
    """generate(): [N, 2, 77] token rows -> [N, 1024, 1024, 3] uint8 images (numpy)."""

    def __init__(
        self,
        model_dir: Path | None,
        inputs: PipelineInputs,
        options: GpuOptions,
        record: dict[str, str] | None = None,
    ) -> None:
        """`record`: a run's provenance, told at load how the UNet ran (its precision and FP8
        layers: counted on the loaded model)."""
        self._model_dir = model_dir
        self._inputs = inputs
        self._options = options
        self._record = record
        self._graphs: dict[int, Any] = {}
        self._static: dict[int, dict[str, Any]] = {}

    def load(self) -> None:
        import torch  # pants: no-infer-dep

        self.torch = torch
        self.device = torch.device("cuda", self._options.device_index)
        torch.cuda.set_device(self.device)
        self.models = SdxlModels(
            self._model_dir, self.device, self._options.vae_fp16, self._options.precision
        )
        if self._record is not None:  # result.json's provenance: what the UNet ran
            self._record.update(
                unet_provenance(
                    self.models.precision, self.models.fp8_layers, self.models.fp8_scaled_mm
                )
            )
        schedule = euler_schedule(self._options.steps)
        self.timesteps = torch.tensor(schedule.timesteps, device=self.device)
        self.sigmas = torch.tensor(schedule.sigmas, device=self.device, dtype=torch.float32)
        self.init_sigma = schedule.init_noise_sigma
        latents = self._inputs.latents
        if latents.shape[-1] != LATENT_SIZE:  # the CPU stand-in's small latents: SDXL's own size
            rng = np.random.default_rng(np.random.SeedSequence([SEED, 22]))
            latents = rng.standard_normal((1, 4, LATENT_SIZE, LATENT_SIZE), dtype=np.float32)
        self.latents = torch.from_numpy(latents).to(self.device)
        self.negative = self._encode(torch.from_numpy(self._inputs.negative[None]).to(self.device))

    def _encode(self, rows: Any) -> tuple[Any, Any]:
        """[N, 2, 77] -> text [N, 77, 2048] and pooled [N, 1280], fp16, as the reference's
        encode_tokens: hidden_states[-2] of each encoder side by side, the second's text_embeds."""
        with self.torch.inference_mode():
            first = self.models.text1(rows[:, 0], output_hidden_states=True)
            second = self.models.text2(rows[:, 1], output_hidden_states=True)
            text = self.torch.cat([first.hidden_states[-2], second.hidden_states[-2]], dim=-1)
            return text, second.text_embeds

    def _unet_buffers(self, rows: int) -> dict[str, Any]:
        torch = self.torch
        half = torch.float16
        size = float(LATENT_SIZE * 8)
        time_ids = torch.tensor([size, size, 0.0, 0.0, size, size], device=self.device, dtype=half)
        return {
            "sample": torch.zeros(
                rows, 4, LATENT_SIZE, LATENT_SIZE, device=self.device, dtype=half
            ),
            "timestep": torch.zeros((), device=self.device, dtype=torch.float32),
            "text": torch.zeros(rows, 77, 2048, device=self.device, dtype=half),
            "pooled": torch.zeros(rows, 1280, device=self.device, dtype=half),
            "time_ids": time_ids.repeat(rows, 1),
        }

    def _unet(self, b: dict[str, Any]) -> Any:
        return self.models.unet(
            b["sample"],
            b["timestep"],
            encoder_hidden_states=b["text"],
            added_cond_kwargs={"text_embeds": b["pooled"], "time_ids": b["time_ids"]},
            return_dict=False,
        )[0]

    def _step_function(self, rows: int) -> tuple[dict[str, Any], Any]:
        """Static inputs of the UNet at `rows` rows and a callable giving its output: a CUDA graph
        replay (captured on first use, after a warm-up on a side stream) or the eager call."""
        torch = self.torch
        if rows not in self._static:
            buffers = self._unet_buffers(rows)
            self._static[rows] = buffers
            if self._options.use_cuda_graphs:
                stream = torch.cuda.Stream(self.device)
                stream.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(stream), torch.inference_mode():
                    for _ in range(2):
                        self._unet(buffers)
                torch.cuda.current_stream(self.device).wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph), torch.inference_mode():
                    output = self._unet(buffers)
                self._graphs[rows] = (graph, output)
        buffers = self._static[rows]
        if rows in self._graphs:
            graph, output = self._graphs[rows]

            def replay() -> Any:
                graph.replay()
                return output

            return buffers, replay
        return buffers, lambda: self._unet(buffers)

    def generate_on_device(self, rows: Any) -> Any:
        """[N, 2, 77] int64 on the GPU -> [N, 1024, 1024, 3] uint8 on the GPU."""
        torch = self.torch
        n = rows.shape[0]
        with torch.inference_mode():
            text, pooled = self._encode(rows)
            neg_text, neg_pooled = self.negative
            buffers, unet = self._step_function(2 * n)
            buffers["text"].copy_(torch.cat([neg_text.expand(n, -1, -1), text]))
            buffers["pooled"].copy_(torch.cat([neg_pooled.expand(n, -1), pooled]))
            latents = self.latents.expand(n, -1, -1, -1) * self.init_sigma  # fp32
            for step in range(len(self.timesteps)):
                sigma = self.sigmas[step]
                scaled = latents / torch.sqrt(sigma * sigma + 1.0)
                buffers["sample"].copy_(torch.cat([scaled, scaled]))
                buffers["timestep"].copy_(self.timesteps[step])
                noise = unet().float()
                uncond, cond = noise.chunk(2)
                guided = uncond + self._options.guidance * (cond - uncond)
                latents = latents + guided * (self.sigmas[step + 1] - sigma)
            vae = self.models.vae
            decoded = vae.decode(
                (latents / self.models.scaling_factor).to(vae.dtype), return_dict=False
            )[0]
            unit = (decoded.float() / 2 + 0.5).clamp(0, 1)
            return (unit.permute(0, 2, 3, 1) * 255).round().to(torch.uint8)

    def generate(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        on_device = self.torch.from_numpy(np.ascontiguousarray(rows)).to(self.device)
        result: npt.NDArray[np.uint8] = self.generate_on_device(on_device).cpu().numpy()
        return result

    def unload(self) -> None:
        self._graphs.clear()
        self._static.clear()
        self.models = None  # type: ignore[assignment]


class TorchPipelineRunner(Runner):
    """The harness's runner of one GPU: a batch of packed token rows in, image bytes out."""

    name = "torch"

    def __init__(self, engine: TorchSdxlEngine, device_index: int) -> None:
        self._engine = engine
        self.device_index = device_index

    def activate(self) -> None:
        self._engine.load()

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        images = self._engine.generate(unpack_rows(batch))
        return images.reshape(len(images), -1)

    def deactivate(self) -> None:
        self._engine.unload()


def gpu_count() -> int:
    import torch  # pants: no-infer-dep

    if not torch.cuda.is_available():
        raise HarnessError("the torch backend needs a CUDA GPU: none is visible")
    return int(torch.cuda.device_count())


def torch_pipeline_runners(
    options: Any,
    *,
    model_dir: Path,
    inputs: PipelineInputs,
    precision: str = FP16,
    record: dict[str, str] | None = None,
) -> list[Runner]:
    """One runner per GPU and stream (gpu_inference_streams): each its own engine, so that the
    harness's workers drive every GPU at once; the UNet in `precision`, `record` (the run's
    provenance) told how it ran."""
    streams = options.gpu_inference_streams or 1
    directory = model_dir if (model_dir / "unet").is_dir() else None
    runners: list[Runner] = []
    for index in range(gpu_count()):
        for _ in range(streams):
            gpu = GpuOptions(device_index=index, precision=precision)
            engine = TorchSdxlEngine(directory, inputs, gpu, record)
            runners.append(TorchPipelineRunner(engine, index))
    return runners
