"""Gathering a batch from the preloaded samples: the same rows numpy's fancy indexing gives, for
every split over threads, into fresh, recycled or caller-given buffers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness import native
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore


def store_of(data: npt.NDArray[np.generic], **options: int) -> PreloadedSampleStore:
    def read(indices: Sequence[int]) -> npt.NDArray[np.generic]:
        return data[list(indices)]

    store = PreloadedSampleStore(read, len(data), len(data), **options)  # type: ignore[arg-type]
    store.load(list(range(len(data))))
    return store


@pytest.mark.parametrize("threads", [0, 1, 2, 3, 8])
@pytest.mark.parametrize("batch", [1, 2, 7, 33])
def test_large_samples_any_split_over_threads(threads: int, batch: int) -> None:
    # 150,528-byte samples (ResNet-50 int8): big enough that every batch above one sample is split.
    rng = np.random.default_rng(batch)
    data = rng.integers(-128, 128, size=(40, 3, 224, 224), dtype=np.int8)
    store = store_of(data, gather_threads=threads)
    indices = rng.integers(0, 40, size=batch).tolist()  # repeats allowed, any order
    assert np.array_equal(store.gather(indices), data[indices])


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.int64, np.float16])
def test_dtypes_and_shapes(dtype: type[np.generic]) -> None:
    data = np.arange(5 * 3 * 2).reshape(5, 3, 2).astype(dtype)
    gathered = store_of(data).gather([4, 0, 4])
    assert gathered.dtype == dtype and gathered.shape == (3, 3, 2)
    assert np.array_equal(gathered, data[[4, 0, 4]])


def test_empty_batch() -> None:
    data = np.ones((4, 3), dtype=np.float32)
    gathered = store_of(data).gather([])
    assert gathered.shape == (0, 3) and gathered.dtype == np.float32


def test_loads_in_several_sets_map_indices_to_slots() -> None:
    data = np.arange(10, dtype=np.int64).reshape(10, 1) * 11

    def read(indices: Sequence[int]) -> npt.NDArray[np.int64]:
        return data[list(indices)]

    store = PreloadedSampleStore(read, 10, 10)
    store.load([7, 2])
    store.load([2, 9])  # 2 is already there
    assert store.gather([9, 7, 2]).ravel().tolist() == [99, 77, 22]
    with pytest.raises(RuntimeError, match="never loaded"):
        store.gather([3])
    with pytest.raises(IndexError):
        store.gather([10])
    store.unload([7, 2, 9])
    with pytest.raises(RuntimeError, match="never loaded"):
        store.gather([7])


def test_gather_into_a_given_buffer() -> None:
    data = np.arange(24, dtype=np.float32).reshape(6, 4)
    store = store_of(data)
    out = np.full((2, 4), -1, dtype=np.float32)
    assert store.gather([5, 1], out=out) is out
    assert np.array_equal(out, data[[5, 1]])
    with pytest.raises(ValueError):
        store.gather([5, 1, 2], out=out)  # wrong size
    with pytest.raises(ValueError):
        store.gather([5, 1], out=np.empty((2, 4), dtype=np.float64))  # wrong dtype


def test_buffers_are_recycled_once_released() -> None:
    pool = native.BufferPool()
    first = pool.empty([64, 1024], np.uint8)
    address = first.ctypes.data
    assert (pool.allocated, pool.reused) == (1, 0)
    held = pool.empty([64, 1024], np.uint8)  # the first is still alive: a new buffer
    assert held.ctypes.data != address and pool.allocated == 2
    del first
    again = pool.empty([64, 1024], np.uint8)
    assert again.ctypes.data == address and pool.reused == 1
    assert pool.cached_bytes == 0
    del held, again
    assert pool.cached_bytes == 2 * 64 * 1024


def test_a_gathered_batch_outlives_its_store() -> None:
    data = np.arange(8, dtype=np.float64).reshape(4, 2)
    gathered = store_of(data).gather([3, 1])  # the store (and its pool) are dropped here
    assert gathered.tolist() == [[6.0, 7.0], [2.0, 3.0]]


def test_pinned_buffers_need_the_cuda_runtime_and_a_gpu() -> None:
    if not native.cuda_host_alloc_available():
        with pytest.raises(RuntimeError, match="CUDA runtime"):
            native.BufferPool(pinned=True)
        return
    pool = native.BufferPool(pinned=True)
    try:
        pinned = pool.empty([4, 4], np.float32)
    except RuntimeError as error:  # the runtime is installed but no GPU or driver answers
        assert "cudaHostAlloc" in str(error)
        return
    pinned[:] = 1.0
    assert float(pinned.sum()) == 16.0
