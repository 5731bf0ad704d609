"""RNN-T's input features, computed as MLCommons' reference computes them at evaluation
(`retired_benchmarks/speech_recognition/rnnt`: `pytorch/parts/features.py`, FilterbankFeatures, with
`rnnt.toml`'s `input_eval` settings), in NumPy.

16 kHz audio; pre-emphasis 0.97; a centred STFT (reflect padding of n_fft / 2 each side) of 512
points with a 320-sample symmetric Hann window (zero-padded to 512, centred) every 160 samples; the
power spectrum plus the deterministic dither's square (1e-5 ** 2); 80 Slaney mel filters from 0 to
8 kHz (librosa's default filter bank: Slaney's mel scale, area-normalised); log(x + 1e-20); frames
spliced three at a time (frame t, t+1, t+2 side by side, zeros past the end, every third kept:
240 values a frame, 30 ms apart); each of the 240 features normalised over the utterance's frames
(mean, unbiased standard deviation + 1e-5), the frames cut to ceil(ceil(samples / 160) / 3).

The result is [frames, 240] float32, time first. The arithmetic is float64 here where the reference
computes in float32: values agree to float32 rounding, not bit for bit.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

SAMPLE_RATE = 16_000
WINDOW = 320  # 0.02 s
HOP = 160  # 0.01 s
N_FFT = 512
MELS = 80
SPLICE = 3
FEATURES = MELS * SPLICE  # 240: the encoder's input width
PREEMPHASIS = 0.97
DITHER = 1e-5
LOG_FLOOR = 1e-20
STD_FLOOR = 1e-5


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Slaney's mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above."""
    linear = hz / (200.0 / 3.0)
    log_part = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    result: npt.NDArray[np.float64] = np.where(hz >= 1000.0, log_part, linear)
    return result


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    linear = mel * (200.0 / 3.0)
    log_part = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
    result: npt.NDArray[np.float64] = np.where(mel >= 15.0, log_part, linear)
    return result


@functools.cache
def mel_filterbank(
    sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, mels: int = MELS
) -> npt.NDArray[np.float64]:
    """[mels, n_fft // 2 + 1]: triangular filters evenly spaced on Slaney's mel scale from 0 Hz to
    the Nyquist frequency, each scaled by 2 / its width in Hz (librosa's norm="slaney")."""
    bins = np.linspace(0.0, sample_rate / 2.0, n_fft // 2 + 1)
    edges = _mel_to_hz(
        np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(sample_rate / 2.0)), mels + 2)
    )
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    result: npt.NDArray[np.float64] = filters * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return result


@functools.cache
def _window() -> npt.NDArray[np.float64]:
    """The symmetric Hann window (torch.hann_window(320, periodic=False)) centred in n_fft."""
    hann = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(WINDOW) / (WINDOW - 1))
    left = (N_FFT - WINDOW) // 2
    return np.pad(hann, (left, N_FFT - WINDOW - left))


def feature_frames(samples: int) -> int:
    """The reference's get_seq_len: frames of features for this many samples."""
    return ((samples + HOP - 1) // HOP + SPLICE - 1) // SPLICE


def log_mel_features(waveform: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.float32]:
    """[feature_frames(len), 240] float32 features of a mono 16 kHz waveform in [-1, 1]."""
    x = np.asarray(waveform, dtype=np.float64)
    if x.ndim != 1 or len(x) <= N_FFT // 2:
        raise HarnessError(
            f"an utterance must be mono audio of more than {N_FFT // 2} samples, not shape "
            f"{list(x.shape)}"
        )
    x = np.concatenate([x[:1], x[1:] - PREEMPHASIS * x[:-1]])
    padded = np.pad(x, N_FFT // 2, mode="reflect")
    count = 1 + len(x) // HOP
    starts = np.arange(count) * HOP
    frames = padded[starts[:, None] + np.arange(N_FFT)[None, :]] * _window()
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2 + DITHER**2
    mel = np.log(power @ mel_filterbank().T + LOG_FLOOR)  # [count, 80]
    spliced = [mel]
    for shift in range(1, SPLICE):
        shifted = np.zeros_like(mel)
        shifted[:-shift] = mel[shift:]
        spliced.append(shifted)
    stacked = np.concatenate(spliced, axis=1)[::SPLICE]
    stacked = stacked[: feature_frames(len(x))]
    mean = stacked.mean(axis=0)
    std = stacked.std(axis=0, ddof=1) if len(stacked) > 1 else np.zeros_like(mean)
    result: npt.NDArray[np.float32] = ((stacked - mean) / (std + STD_FLOOR)).astype(np.float32)
    return result
