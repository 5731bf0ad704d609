"""The stand-in's speech: generated utterances whose characters can be heard.

Each of the 28 symbols (space, a-z, apostrophe) is rendered as its own chord of two tones from a
fixed set of 11 frequencies between 250 Hz and 5.5 kHz, 120-200 ms long after a 50-80 ms pause, with
per-character jitter (pitch +-3%, loudness), a short attack and release, a per-utterance gain and
background noise at a random level. Words are drawn from a generated vocabulary whose words never
hold the same letter twice in a row (so consecutive symbols of an utterance always differ: what the
stand-in's decoder relies on, stand_in_model.py); an utterance is 3-6 words, 2-5 seconds.

Every utterance depends only on (seed, split, index); each comes with the sample span of every
symbol (the training set's alignment for fitting).
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.librispeech.alphabet import LABELS
from mlperf_harness.datasets.librispeech.features import SAMPLE_RATE

_FREQUENCIES = np.geomspace(250.0, 5500.0, 11)
_PAIRS = [pair for pair in itertools.combinations(range(len(_FREQUENCIES)), 2)]
# 28 of the 55 chords, spread over the pairs, one per symbol.
CHORDS = tuple(_PAIRS[(7 * k) % len(_PAIRS)] for k in range(len(LABELS)))
VOCABULARY_WORDS = 400
SPLITS = {"train": 0, "validation": 1}


@dataclass(frozen=True)
class Utterance:
    text: str
    samples: npt.NDArray[np.float32]
    spans: npt.NDArray[np.int64]  # [len(text), 2]: each symbol's first and last + 1 sample


def vocabulary(seed: int) -> tuple[str, ...]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 77]))
    letters = string.ascii_lowercase + "'"
    words: list[str] = []
    while len(words) < VOCABULARY_WORDS:
        length = int(rng.integers(2, 7))
        word = ""
        while len(word) < length:
            letter = letters[
                int(rng.integers(0, 26 if not word or len(word) == length - 1 else 27))
            ]
            if not word or letter != word[-1]:
                word += letter
        if word not in words:
            words.append(word)
    return tuple(words)


def utterance(seed: int, split: str, index: int, words: tuple[str, ...]) -> Utterance:
    rng = np.random.default_rng(np.random.SeedSequence([seed, SPLITS[split], index]))
    count = int(rng.integers(3, 7))
    text = " ".join(words[int(i)] for i in rng.integers(0, len(words), count))
    gain = float(rng.uniform(0.5, 1.5))
    pieces: list[npt.NDArray[np.float64]] = [np.zeros(int(rng.uniform(0.1, 0.3) * SAMPLE_RATE))]
    spans = []
    position = len(pieces[0])
    for char in text:
        pause = np.zeros(int(rng.uniform(0.05, 0.08) * SAMPLE_RATE))
        pieces.append(pause)
        position += len(pause)
        length = int(rng.uniform(0.12, 0.2) * SAMPLE_RATE)
        pieces.append(_chord(CHORDS[LABELS.index(char)], length, gain, rng))
        spans.append((position, position + length))
        position += length
    pieces.append(np.zeros(int(rng.uniform(0.1, 0.3) * SAMPLE_RATE)))
    audio = np.concatenate(pieces)
    noise = float(rng.uniform(0.003, 0.02))
    audio = audio + noise * rng.standard_normal(len(audio))
    samples = np.clip(audio, -1.0, 1.0).astype(np.float32)
    return Utterance(text, samples, np.array(spans, np.int64).reshape(-1, 2))


def _chord(
    chord: tuple[int, int], length: int, gain: float, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    t = np.arange(length) / SAMPLE_RATE
    sound = np.zeros(length)
    for tone in chord:
        frequency = _FREQUENCIES[tone] * rng.uniform(0.97, 1.03)
        sound += rng.uniform(0.12, 0.3) * np.sin(2 * np.pi * frequency * t + rng.uniform(0, 6.3))
    ramp = min(length // 4, int(0.01 * SAMPLE_RATE))
    envelope = np.ones(length)
    envelope[:ramp] = np.linspace(0.0, 1.0, ramp)
    envelope[length - ramp :] = np.linspace(1.0, 0.0, ramp)
    result: npt.NDArray[np.float64] = gain * sound * envelope
    return result
