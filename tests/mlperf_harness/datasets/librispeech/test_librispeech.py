"""LibriSpeech for RNN-T: the reference's feature pipeline, WAV reading, transcripts and the
resumable preprocessing, with each bad input one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.datasets.librispeech import alphabet, features
from mlperf_harness.datasets.librispeech.manifest import (
    MANIFEST_FILE,
    manifest_entry,
    read_manifest,
)
from mlperf_harness.datasets.librispeech.preprocess import (
    load_preprocessed,
    preprocess_librispeech,
)
from mlperf_harness.datasets.librispeech.wav import read_wav, write_wav
from mlperf_harness.errors import HarnessError


def _tone(seconds: float, hz: float) -> npt.NDArray[np.float32]:
    t = np.arange(int(seconds * features.SAMPLE_RATE)) / features.SAMPLE_RATE
    result: npt.NDArray[np.float32] = (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    return result


def test_slaney_filterbank_matches_librosa_layout() -> None:
    bank = features.mel_filterbank()
    assert bank.shape == (80, 257)
    # Slaney's scale is linear below 1 kHz: the first filters' peaks are 200/3 Hz apart...
    peaks = np.argmax(bank, axis=1) * (8000 / 256)
    assert 0 < peaks[1] - peaks[0] < 100
    # ...and area-normalised: a filter's weights sum to about 2 / width * (width / bin) / 2.
    assert np.all(bank >= 0) and np.all(bank.sum(axis=1) > 0)
    assert bank[0].max() > bank[-1].max()  # narrow low filters are taller


def test_features_have_the_reference_frames_and_normalisation() -> None:
    samples = 16_000 * 2 + 37
    out = features.log_mel_features(_tone(samples / 16_000, 440.0))
    assert out.shape == (((samples + 159) // 160 + 2) // 3, 240)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-4)
    # Frame splicing: features 80..159 of frame t are features 0..79 of the 10 ms frame after it.
    assert not np.allclose(out[:, :80], out[:, 80:160])


def test_wav_round_trip_and_bad_audio_are_one_line(tmp_path: Path) -> None:
    tone = _tone(0.5, 1000.0)
    write_wav(tmp_path / "a.wav", tone)
    back = read_wav(tmp_path / "a.wav")
    np.testing.assert_allclose(back, tone, atol=1 / 32767)
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes((tmp_path / "a.wav").read_bytes()[:30])
    with pytest.raises(HarnessError, match=r"corrupt.wav is not a readable WAV file"):
        read_wav(corrupt)
    flac = tmp_path / "x.flac"
    flac.write_bytes(b"fLaC" + bytes(100))
    with pytest.raises(HarnessError, match=r"is FLAC.*convert it to 16 kHz WAV"):
        read_wav(flac)
    cut = tmp_path / "cut.wav"
    cut.write_bytes((tmp_path / "a.wav").read_bytes()[:1000])
    with pytest.raises(HarnessError) as error:
        read_wav(cut)
    assert "\n" not in str(error.value)


def test_transcripts_normalised_and_outside_characters_refused() -> None:
    assert alphabet.normalize_transcript("HE SAID, 'NO!'  Sir", "t") == "he said 'no ' sir"
    with pytest.raises(HarnessError, match=r"outside RNN-T's alphabet.*'3'"):
        alphabet.normalize_transcript("CHAPTER 3", "dev-clean-wav.json: utterance 7")
    with pytest.raises(HarnessError, match=r"outside RNN-T's alphabet.*'é'"):
        alphabet.normalize_transcript("café", "t")
    assert alphabet.decode(alphabet.encode("it's a")) == "it's a"
    with pytest.raises(HarnessError, match="symbol id 28"):
        alphabet.decode([1, 28])


def _dataset(directory: Path, texts: list[str]) -> None:
    entries = []
    for index, text in enumerate(texts):
        name = f"dev-clean-wav/{index}.wav"
        tone = _tone(0.4 + 0.1 * index, 300.0 + 100 * index)
        write_wav(directory / name, tone)
        entries.append(manifest_entry(name, text, len(tone), 16_000))
    (directory / MANIFEST_FILE).write_text(json.dumps(entries))


def test_manifest_transcript_outside_alphabet_is_one_line(tmp_path: Path) -> None:
    _dataset(tmp_path, ["HELLO", "ROOM 101"])
    with pytest.raises(HarnessError, match=r"utterance 1: the transcript has characters outside"):
        read_manifest(tmp_path)


def test_preprocessing_resumes_and_a_corrupt_file_stops_it_in_one_line(tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    _dataset(data, ["HELLO WORLD", "A B", "IT'S"])
    dataset = read_manifest(data)
    first = preprocess_librispeech(dataset, out, progress=False)
    assert (first.processed, first.skipped) == (3, 0)
    again = preprocess_librispeech(dataset, out, progress=False)
    assert (again.processed, again.skipped) == (0, 3)
    loaded = load_preprocessed(out)
    assert loaded.transcripts == ("hello world", "a b", "it's")
    assert loaded.features.shape[1] % 2 == 0
    assert list(loaded.lengths) == [
        features.feature_frames(int(0.4 * 16000 + i * 1600)) for i in range(3)
    ]
    (data / "dev-clean-wav/1.wav").write_bytes(b"RIFF....WAVEjunk")
    with pytest.raises(HarnessError, match=r"1.wav is not a readable WAV file"):
        preprocess_librispeech(read_manifest(data), out, progress=False)
    # What was finished is kept: with the file mended, only it is computed again.
    write_wav(data / "dev-clean-wav/1.wav", _tone(0.5, 400.0))
    mended = preprocess_librispeech(read_manifest(data), out, progress=False)
    assert (mended.processed, mended.skipped) == (1, 2)
