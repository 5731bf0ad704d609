"""DLRM-v2's int8 rows (int8_rows.py): their layout, what they round to, the stand-in's model with
them, and (slow) the stand-in's held-out AUC with int8 tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mlperf_harness.benchmarks.dlrm_v2 import int8_rows
from mlperf_harness.benchmarks.dlrm_v2.gpu_model import (
    GpuModelSource,
    choose_placement,
    load_source,
    write_real_size_spec,
)
from mlperf_harness.benchmarks.dlrm_v2.topology import TABLE_ROWS
from mlperf_harness.errors import HarnessError


def test_a_row_is_its_values_then_its_fp16_scale_in_whole_sectors() -> None:
    assert int8_rows.row_bytes(128) == 160 and int8_rows.row_bytes(8) == 32
    rows = np.array([[0.5, -1.27, 0.0, 0.01], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    table = int8_rows.quantize_rows(rows)
    assert table.shape == (2, 32) and table.dtype == np.int8
    scales = int8_rows.row_scales(table, 4)
    assert scales[0] == np.float16(1.27 / 127) and scales[1] == 0
    assert table[0, :4].tolist() == [50, -127, 0, 1]
    assert not table[:, 6:].any()  # the padding
    assert not int8_rows.dequantize_rows(table, 4)[1].any()  # a row of zeros stays zeros


def test_the_values_are_within_half_a_step_of_the_rows() -> None:
    rows = np.random.default_rng(0).normal(0.0, 0.1, (500, 128)).astype(np.float32)
    table = int8_rows.quantize_rows(rows)
    step = int8_rows.row_scales(table, 128).astype(np.float32)[:, None]
    error = np.abs(int8_rows.dequantize_rows(table, 128) - rows)
    assert np.all(error <= step * 0.5 + np.abs(rows) * 1e-6)
    assert np.abs(table[:, :128]).max() == 127  # each row's largest magnitude takes the range


def test_an_odd_width_has_no_place_for_the_scale() -> None:
    with pytest.raises(HarnessError, match="even width"):
        int8_rows.quantize_rows(np.ones((2, 5), dtype=np.float32))


def test_the_int8_model_changes_only_the_tables() -> None:
    tables = np.random.default_rng(1).normal(0.0, 1.0, (40, 8)).astype(np.float32)
    bias = np.arange(3, dtype=np.float32)
    graph = onnx.helper.make_graph(
        [],
        "g",
        [],
        [],
        [numpy_helper.from_array(tables, "tables"), numpy_helper.from_array(bias, "top/0/bias")],
    )
    changed = int8_rows.int8_model(onnx.helper.make_model(graph))
    values = {i.name: numpy_helper.to_array(i) for i in changed.graph.initializer}
    assert np.array_equal(values["top/0/bias"], bias)
    want = int8_rows.dequantize_rows(int8_rows.quantize_rows(tables), 8)
    assert np.array_equal(values["tables"], want) and not np.array_equal(want, tables)
    with pytest.raises(HarnessError, match="no stacked `tables`"):
        int8_rows.int8_model(onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [])))


def test_the_placement_counts_int8_rows_bytes(tmp_path: Path) -> None:
    source: GpuModelSource = load_source(write_real_size_spec(tmp_path / "spec.json"))
    assert source.table_bytes() == sum(TABLE_ROWS) * 256
    assert source.table_bytes(int8=True) == sum(TABLE_ROWS) * 160  # 32.7 GB
    h100 = [80 * 10**9]
    assert choose_placement(None, source.table_bytes(int8=True), h100 * 2)[0] == "replicated"
    assert choose_placement(None, source.table_bytes(), h100 * 2)[0] == "sharded"


@pytest.mark.slow
def test_int8_tables_keep_the_stand_ins_auc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert int8_rows.main(["--scratch_path", str(tmp_path)]) == 0
    line = capsys.readouterr().out
    fp32 = float(line.split("tables fp32 ")[1].split(",")[0])
    int8 = float(line.split("int8 rows ")[1].split(" ")[0])
    assert fp32 > 0.7 and int8 >= 0.999 * fp32, line
