"""VolumeStore: samples of different shapes kept each as its own array."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.volume_store import VolumeStore

SHAPES = {0: (1, 2, 3, 4), 1: (1, 4, 3, 2), 2: (1, 2, 3, 4)}


def _read(index: int) -> npt.NDArray[Any]:
    return np.full(SHAPES[index], index, dtype=np.float32)


def test_loads_gathers_one_volume_or_several_of_one_shape() -> None:
    store = VolumeStore(_read, 3, 43, (1, 8, 8, 8))
    assert store.performance_count == 3  # never more than there are
    store.load([0, 1, 2])
    assert store.gather([1]).shape == (1, 1, 4, 3, 2)
    pair = store.gather([2, 0])
    assert pair.shape == (2, 1, 2, 3, 4) and pair[0].max() == 2 and pair[1].max() == 0
    out = np.empty((1, 1, 4, 3, 2), dtype=np.float32)
    assert store.gather([1], out=out) is out and out.max() == 1
    assert sorted(store.loaded()) == [0, 1, 2]
    assert store.warmup_batch(2).shape == (2, 1, 8, 8, 8)


def test_refuses_mixed_shapes_and_samples_never_loaded_in_one_line() -> None:
    store = VolumeStore(_read, 3, 3, (1, 8, 8, 8))
    store.load([0, 1])
    with pytest.raises(HarnessError, match="--batch_size 1"):
        store.gather([0, 1])
    store.unload([0, 1])
    with pytest.raises(HarnessError, match="sample 0, which was never loaded"):
        store.gather([0])
