"""The Euler discrete scheduler with SDXL base 1.0's configuration (scheduler/scheduler_config.json,
which MLCommons' reference loads): betas "scaled_linear" from 0.00085 to 0.012 over 1,000 training
steps, "leading" timestep spacing with steps_offset 1, linear interpolation of the sigmas, epsilon
prediction, no churn. As `diffusers`' EulerDiscreteScheduler computes it:

- betas = linspace(sqrt(0.00085), sqrt(0.012), 1000)^2; alphas_cumprod = cumprod(1 - betas);
  sigma(t) = sqrt((1 - alphas_cumprod[t]) / alphas_cumprod[t]);
- 20 steps, "leading": timesteps = (arange(20) * (1000 // 20))[::-1] + 1 = 951, 901, ..., 1;
  their sigmas by linear interpolation over t, then a final 0;
- the initial latents are multiplied by init_noise_sigma = sqrt(max(sigmas)^2 + 1) ("leading");
- each step feeds the UNet sample / sqrt(sigma^2 + 1), and with the guided noise prediction eps:
  sample <- sample + eps * (sigma_next - sigma).

Everything is float32 like the reference's tensors; the arithmetic of the schedule itself is done
in float64 and then rounded, as numpy does it in diffusers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BETA_START, BETA_END, TRAIN_STEPS, STEPS_OFFSET = 0.00085, 0.012, 1000, 1
STEPS = 20
GUIDANCE = 8.0


@dataclass(frozen=True)
class EulerSchedule:
    timesteps: npt.NDArray[np.float32]  # [steps], what the UNet is given
    sigmas: npt.NDArray[np.float32]  # [steps + 1], the last 0
    init_noise_sigma: float

    def scale_input(self, sample: npt.NDArray[np.float32], step: int) -> npt.NDArray[np.float32]:
        sigma = self.sigmas[step]
        scaled: npt.NDArray[np.float32] = (
            sample / np.sqrt(sigma * sigma + np.float32(1.0))
        ).astype(np.float32)
        return scaled

    def step(
        self, noise: npt.NDArray[np.float32], step: int, sample: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        dt = self.sigmas[step + 1] - self.sigmas[step]
        stepped: npt.NDArray[np.float32] = (sample + noise * dt).astype(np.float32)
        return stepped


def euler_schedule(steps: int = STEPS) -> EulerSchedule:
    betas = np.linspace(BETA_START**0.5, BETA_END**0.5, TRAIN_STEPS, dtype=np.float32) ** 2
    alphas_cumprod = np.cumprod(1.0 - betas, axis=0)
    all_sigmas = np.array(((1 - alphas_cumprod) / alphas_cumprod) ** 0.5)
    ratio = TRAIN_STEPS // steps
    timesteps = (np.arange(0, steps) * ratio).round()[::-1].copy().astype(np.float32)
    timesteps += STEPS_OFFSET
    sigmas = np.interp(timesteps, np.arange(0, len(all_sigmas)), all_sigmas)
    sigmas = np.concatenate([sigmas, [0.0]]).astype(np.float32)
    init = float((float(sigmas.max()) ** 2 + 1) ** 0.5)
    return EulerSchedule(timesteps=timesteps, sigmas=sigmas, init_noise_sigma=init)


def guided(noise: npt.NDArray[np.float32], guidance: float = GUIDANCE) -> npt.NDArray[np.float32]:
    """Classifier-free guidance over a batch laid out as the reference's pipeline lays it out:
    [unconditional rows; conditional rows] -> uncond + g (cond - uncond)."""
    uncond, cond = np.split(noise, 2, axis=0)
    combined: npt.NDArray[np.float32] = (uncond + np.float32(guidance) * (cond - uncond)).astype(
        np.float32
    )
    return combined
