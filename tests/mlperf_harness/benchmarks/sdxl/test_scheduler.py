"""SDXL's Euler schedule against its definition, computed here independently in float64."""

from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.sdxl.scheduler import euler_schedule, guided


def test_leading_spacing_with_offset_one() -> None:
    schedule = euler_schedule(20)
    assert schedule.timesteps.tolist() == [951.0 - 50 * i for i in range(20)]
    assert schedule.sigmas.shape == (21,) and schedule.sigmas[-1] == 0.0


def test_sigmas_follow_scaled_linear_betas() -> None:
    betas = np.linspace(0.00085**0.5, 0.012**0.5, 1000) ** 2
    alphas_cumprod = np.cumprod(1.0 - betas)
    expected = np.sqrt((1 - alphas_cumprod) / alphas_cumprod)
    schedule = euler_schedule(20)
    for step, t in enumerate(schedule.timesteps):
        assert abs(schedule.sigmas[step] - expected[int(t)]) < 1e-4 * expected[int(t)]
    # "leading": the initial latents are scaled by sqrt(sigma_max^2 + 1), not sigma_max.
    assert abs(schedule.init_noise_sigma - np.sqrt(expected[951] ** 2 + 1)) < 1e-3


def test_a_step_is_an_euler_step_of_the_predicted_noise() -> None:
    schedule = euler_schedule(20)
    sample = np.ones((1, 4, 2, 2), np.float32)
    noise = np.full_like(sample, 0.5)
    stepped = schedule.step(noise, 3, sample)
    assert np.allclose(stepped, 1 + 0.5 * (schedule.sigmas[4] - schedule.sigmas[3]))
    scaled = schedule.scale_input(sample, 0)
    assert np.allclose(scaled, 1 / np.sqrt(schedule.sigmas[0] ** 2 + 1))


def test_guidance_combines_the_unconditional_and_conditional_halves() -> None:
    noise = np.concatenate([np.zeros((2, 1), np.float32), np.ones((2, 1), np.float32)])
    assert guided(noise, 8.0).tolist() == [[8.0], [8.0]]
