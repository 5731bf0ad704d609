"""The stand-in's parts, small: the multi-hot step, the preprocessed set, the packed pair rows and
their spreading back over samples, the numpy DCN against its ONNX graph, and the fit on a small
generated set reaching an AUC well above chance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mlperf_harness.accuracy.dlrm_auc import roc_auc
from mlperf_harness.benchmarks.dlrm_v2 import stand_in_data
from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
from mlperf_harness.benchmarks.dlrm_v2.fit_dcn import DcnModel, FitSettings
from mlperf_harness.benchmarks.dlrm_v2.pair_store import PairGroupStore, pack_rows, unpack_rows
from mlperf_harness.benchmarks.dlrm_v2.runners import spread_over_samples
from mlperf_harness.benchmarks.dlrm_v2.stand_in import WIDTHS, features
from mlperf_harness.benchmarks.dlrm_v2.stand_in_data import STAND_IN_ROWS
from mlperf_harness.benchmarks.dlrm_v2.stand_in_model import dcn_model
from mlperf_harness.benchmarks.dlrm_v2.topology import (
    INDICES_PER_PAIR,
    MULTI_HOT_SIZES,
    bag_offsets,
)
from mlperf_harness.datasets.criteo.store import (
    CriteoPreprocessed,
    load_preprocessed,
    write_preprocessed,
)
from mlperf_harness.datasets.criteo.transform import multi_hot_bags
from mlperf_harness.errors import HarnessError


def test_multi_hot_bags_start_with_the_value_and_stay_in_their_tables() -> None:
    rows = stand_in_data.generate_rows(0, 5, 300, stand_in_data.click_model(0))
    bags = multi_hot_bags(rows.categorical, STAND_IN_ROWS)
    assert bags.shape == (300, INDICES_PER_PAIR) and bags.dtype == np.int32
    offsets = bag_offsets()
    for table, rows_in_table in enumerate(STAND_IN_ROWS):
        bag = bags[:, offsets[table] : offsets[table + 1]]
        assert np.array_equal(bag[:, 0], rows.categorical[:, table])
        assert bag.min() >= 0 and bag.max() < rows_in_table
    # A fixed function of (table, value): the same value always gives the same bag.
    again = multi_hot_bags(rows.categorical[::-1], STAND_IN_ROWS)[::-1]
    assert np.array_equal(bags, again)
    assert sum(MULTI_HOT_SIZES) == 214


def test_group_sizes_follow_the_reference_quantiles() -> None:
    sizes = stand_in_data.group_sizes(0, 4000)
    assert set(sizes.tolist()) <= set(stand_in_data.GROUP_SIZE_QUANTILES)
    assert abs(sizes.mean() - 270) < 10  # the quantiles' mean


def _small_set(tmp_path: Path, samples: int = 6) -> CriteoPreprocessed:
    sizes = stand_in_data.group_sizes(1, samples)
    groups = stand_in_data.group_offsets(sizes)
    rows = stand_in_data.generate_rows(1, 7, int(groups[-1]), stand_in_data.click_model(1))
    dense, sparse = features(rows)
    return write_preprocessed(
        tmp_path / "set", dense, sparse, rows.labels, groups, STAND_IN_ROWS, "test"
    )


def test_store_gathers_groups_and_runner_spreads_them_back(tmp_path: Path) -> None:
    dataset = _small_set(tmp_path)
    store = PairGroupStore(dataset, len(dataset), len(dataset))
    store.load([4, 1, 2])
    rows = store.gather([2, 4])
    first, last = dataset.pair_range(2), dataset.pair_range(4)
    dense, sparse, labels = unpack_rows(rows)
    expected = np.concatenate([np.arange(*first), np.arange(*last)])
    assert np.array_equal(dense, dataset.dense[expected])
    assert np.array_equal(sparse, dataset.sparse[expected])
    assert np.array_equal(labels, dataset.labels[expected].astype(np.float32))
    counts = store.pair_counts([2, 4])
    probabilities = np.arange(len(rows), dtype=np.float32)
    out = spread_over_samples(probabilities, labels, counts, store.max_pairs)
    assert out.shape == (2, store.max_pairs * 2)
    second = out[1, : counts[1] * 2].reshape(-1, 2)
    assert np.array_equal(second[:, 0], probabilities[counts[0] :])
    assert not out[0, counts[0] * 2 :].any()
    with pytest.raises(HarnessError, match="never loaded"):
        store.gather([0])
    assert np.array_equal(unpack_rows(pack_rows(dense, sparse, labels))[0], dense)


def test_set_refuses_an_index_beyond_its_table(tmp_path: Path) -> None:
    dataset = _small_set(tmp_path)
    sparse = np.array(dataset.sparse)
    sparse[3, bag_offsets()[20] + 5] = STAND_IN_ROWS[20]
    with pytest.raises(HarnessError, match=r"pair 3: table 20 index 2048 is outside its 2048 rows"):
        write_preprocessed(tmp_path / "bad", np.array(dataset.dense), sparse,
                           np.array(dataset.labels), np.array(dataset.groups), STAND_IN_ROWS, "test")  # fmt: skip
    assert not (tmp_path / "bad").exists()
    assert load_preprocessed(dataset.directory).manifest.pairs == len(dataset.labels)


def test_fit_numpy_dcn_matches_its_onnx_graph_and_learns(tmp_path: Path) -> None:
    clicks = stand_in_data.click_model(2)
    train = stand_in_data.generate_rows(2, 0, 40_000, clicks)
    test = stand_in_data.generate_rows(2, 1, 8_000, clicks)
    model = DcnModel(initial_weights(WIDTHS, STAND_IN_ROWS, 2), WIDTHS, STAND_IN_ROWS)
    train_dense, train_sparse = features(train)
    model.fit(train_dense, train_sparse, train.labels, FitSettings(epochs=2, seed=2))
    dense, sparse = features(test)
    session = ort.InferenceSession(
        dcn_model(model.weights, WIDTHS, STAND_IN_ROWS, "test", {}).SerializeToString(),
        providers=["CPUExecutionProvider"],
    )
    (probability,) = session.run(None, {"dense": dense, "sparse": sparse})
    numpy_probability = 1.0 / (1.0 + np.exp(-model.logits(dense, sparse)))
    assert np.abs(probability - numpy_probability).max() < 1e-5
    assert roc_auc(test.labels, probability) > 0.65  # chance is 0.5 (40,000 pairs: 0.69 at seed 2)
