"""Reading and writing the utterances' audio: WAV files of integer PCM at 16 kHz, as MLCommons'
reference reads them (its run.sh converts LibriSpeech's FLAC to WAV with sox before anything else;
its QSL reads WAV through soundfile). FLAC itself is not decoded here (no small pinned decoder):
such a file is refused in one line saying how to convert it. Anything that is not a whole WAV of
16 kHz integer PCM is refused in one line naming the file."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.datasets.librispeech.features import SAMPLE_RATE
from mlperf_harness.errors import HarnessError

_DTYPES = {1: np.uint8, 2: np.int16, 4: np.int32}


def read_wav(path: Path) -> npt.NDArray[np.float32]:
    """Mono float32 samples in [-1, 1) (channels averaged, as the reference does)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as error:
        raise HarnessError(f"cannot read audio {path}: {error.strerror or error}") from None
    if head == b"fLaC":
        raise HarnessError(
            f"{path} is FLAC, which this harness does not decode: convert it to 16 kHz WAV first "
            "(MLCommons' convert_librispeech.py, or sox x.flac x.wav) and use the WAV manifest"
        )
    try:
        with wave.open(str(path), "rb") as audio:
            width, channels, rate = audio.getsampwidth(), audio.getnchannels(), audio.getframerate()
            frames = audio.getnframes()
            data = audio.readframes(frames)
    except (wave.Error, EOFError, OSError) as error:
        raise HarnessError(f"{path} is not a readable WAV file: {error}") from None
    if width not in _DTYPES:
        raise HarnessError(f"{path}: {8 * width}-bit samples; expected 8, 16 or 32-bit PCM")
    if rate != SAMPLE_RATE:
        raise HarnessError(f"{path} is sampled at {rate} Hz; RNN-T's audio is {SAMPLE_RATE} Hz")
    if len(data) != frames * width * channels or frames == 0:
        raise HarnessError(
            f"{path} is cut short: its header promises {frames} frames, it holds "
            f"{len(data) // max(1, width * channels)}"
        )
    raw = np.frombuffer(data, dtype=_DTYPES[width]).reshape(frames, channels)
    if width == 1:  # 8-bit WAV is unsigned
        samples = (raw.astype(np.float32) - 128.0) / 128.0
    else:
        samples = raw.astype(np.float32) / np.float32(2 ** (8 * width - 1))
    result: npt.NDArray[np.float32] = samples.mean(axis=1, dtype=np.float32)
    return result


def wav_bytes(samples: npt.NDArray[np.floating[Any]]) -> bytes:
    """16-bit mono PCM WAV at 16 kHz of samples in [-1, 1]."""
    import io

    pcm = np.clip(np.round(np.asarray(samples) * 32767.0), -32768, 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(SAMPLE_RATE)
        audio.writeframes(pcm.tobytes())
    return buffer.getvalue()


def write_wav(path: Path, samples: npt.NDArray[np.floating[Any]]) -> None:
    write_bytes_atomic(path, wav_bytes(samples))
