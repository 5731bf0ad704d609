"""A Hugging Face GPT-J checkpoint checked before its weights are read (no torch): config.json's
sizes, the shard index, each safetensors shard's header, GPT-J's names and shapes; and refused in
one line when it is another model, another layout, or incomplete. The torch engine factory refuses
such a checkpoint before the run starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gptj_checkpoints import (
    SMALL,
    config_json,
    safetensors_bytes,
    small_weights,
    write_pytorch_index,
    write_safetensors_checkpoint,
)
from one_line_errors import raised_line

from mlperf_harness.benchmarks.gptj.checkpoint_layout import shape_from_config
from mlperf_harness.benchmarks.gptj.engines import gptj_engine_factory
from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B, weight_shapes
from mlperf_harness.engines.torch_gptj.checkpoint_files import (
    PYTORCH,
    SAFETENSORS,
    check_checkpoint,
    safetensors_shapes,
)


def test_safetensors_checkpoint_is_read_by_its_index(tmp_path: Path) -> None:
    weights = small_weights()
    weights["transformer.h.0.attn.bias"] = np.ones((1, 1, 8, 8), np.float32)  # a buffer: ignored
    directory = write_safetensors_checkpoint(tmp_path / "ckpt", weights, shards=3)
    files = check_checkpoint(directory)
    assert files.shape == SMALL
    assert files.format == SAFETENSORS
    assert len(files.shards) == 3
    assert sorted(n for names in files.shards.values() for n in names) == sorted(weights)
    first = next(iter(files.shards))
    assert safetensors_shapes(first) == {n: weights[n].shape for n in files.shards[first]}


def test_pytorch_index_names_are_checked_without_torch(tmp_path: Path) -> None:
    files = check_checkpoint(write_pytorch_index(tmp_path / "ckpt", list(weight_shapes(SMALL))))
    assert files.format == PYTORCH
    assert [p.name for p in files.shards] == [
        f"pytorch_model-0000{n}-of-00003.bin" for n in (1, 2, 3)
    ]


def test_gptj_6b_config_gives_its_shape(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config_json(GPTJ_6B)))
    assert shape_from_config(tmp_path) == GPTJ_6B


def test_a_model_of_another_type_is_refused(tmp_path: Path) -> None:
    write_safetensors_checkpoint(
        tmp_path, small_weights(), config={**config_json(SMALL), "model_type": "llama"}
    )
    line = raised_line(check_checkpoint, tmp_path)
    assert "is not a GPT-J checkpoint" in line and "'llama'" in line


def test_tensors_of_another_layout_are_refused(tmp_path: Path) -> None:
    renamed = {
        name.replace("transformer.h.", "model.layers."): w for name, w in small_weights().items()
    }
    write_safetensors_checkpoint(tmp_path, renamed)
    line = raised_line(check_checkpoint, tmp_path)
    assert "is not GPT-J's layout" in line and "has no tensor transformer.h.0" in line


def test_a_tensor_of_another_shape_is_refused(tmp_path: Path) -> None:
    weights = small_weights()
    weights["transformer.h.1.mlp.fc_in.weight"] = np.zeros(
        (SMALL.inner + 1, SMALL.hidden), np.float32
    )
    write_safetensors_checkpoint(tmp_path, weights)
    line = raised_line(check_checkpoint, tmp_path)
    assert "transformer.h.1.mlp.fc_in.weight is [25, 16], expected [24, 16]" in line


def test_a_missing_shard_is_refused(tmp_path: Path) -> None:
    write_safetensors_checkpoint(tmp_path, small_weights(), shards=2)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    line = raised_line(check_checkpoint, tmp_path)
    assert "model-00002-of-00002.safetensors, which is not in" in line


def test_a_truncated_shard_is_refused(tmp_path: Path) -> None:
    write_safetensors_checkpoint(tmp_path, small_weights(), shards=1)
    shard = tmp_path / "model-00001-of-00001.safetensors"
    shard.write_bytes(shard.read_bytes()[:-100])
    assert "past the end of the file" in raised_line(check_checkpoint, tmp_path)
    shard.write_bytes(b"\x05\x00")
    assert "not a safetensors file" in raised_line(check_checkpoint, tmp_path)


def test_a_malformed_index_is_refused(tmp_path: Path) -> None:
    write_pytorch_index(tmp_path, list(weight_shapes(SMALL)))
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text('{"weight_map": []}')
    assert "is not a shard index" in raised_line(check_checkpoint, tmp_path)
    index.write_text('{"weight_map": {"lm_head.bias": "../elsewhere.bin"}}')
    assert "not a file beside it" in raised_line(check_checkpoint, tmp_path)
    index.write_text("{")
    assert "is not JSON" in raised_line(check_checkpoint, tmp_path)


def test_a_directory_without_weights_or_config_is_refused(tmp_path: Path) -> None:
    assert "it has no config.json" in raised_line(check_checkpoint, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config_json(SMALL)))
    assert "no GPT-J weights in" in raised_line(check_checkpoint, tmp_path)
    assert "directory not found" in raised_line(check_checkpoint, tmp_path / "absent")


def test_a_single_safetensors_file_needs_no_index(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config_json(SMALL)))
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(small_weights()))
    files = check_checkpoint(tmp_path)
    assert set(next(iter(files.shards.values()))) == set(small_weights())


def _torch_factory(checkpoint: Path, precision: str | None = None) -> object:
    """What gptj_engine_factory returns for the torch backend over `checkpoint` (the engine
    itself is made on the GPU host; here only the checks before it)."""
    return gptj_engine_factory(
        "torch",
        checkpoint,
        None,
        slots=None,
        beams=4,
        max_length=200,
        eos_id=0,
        threads=None,
        precision=precision,
    )


@pytest.mark.parametrize("bad", ["another_type", "another_layout"])
def test_torch_factory_refuses_a_wrong_checkpoint_before_the_run(tmp_path: Path, bad: str) -> None:
    weights = small_weights()
    if bad == "another_type":
        write_safetensors_checkpoint(
            tmp_path, weights, config={**config_json(SMALL), "model_type": "gpt2"}
        )
    else:
        del weights["lm_head.bias"]
        write_safetensors_checkpoint(tmp_path, weights)
    line = raised_line(_torch_factory, tmp_path)
    assert "not a GPT-J checkpoint" in line or "has no tensor lm_head.bias" in line


def test_torch_factory_refuses_a_precision_the_engine_lacks(tmp_path: Path) -> None:
    write_safetensors_checkpoint(tmp_path, small_weights())
    line = raised_line(_torch_factory, tmp_path, "int8")
    assert line == "GPT-J's torch engine runs fp32, fp16, bf16, fp8, not precision 'int8'"


def test_torch_factory_accepts_a_gptj_checkpoint(tmp_path: Path) -> None:
    write_safetensors_checkpoint(tmp_path, small_weights())
    for precision in (None, "fp16", "fp8"):
        assert callable(_torch_factory(tmp_path, precision))
