"""The official checkpoint's loader where torch is installed (GPU hosts; skipped in the CPU build):
a small GPT-J saved as Hugging Face saves it (pytorch_model-*.bin shards with their index, torch's
own format) loads into the same model as its weights given directly, in fp32 and in fp8 (the same
quantized projections), and a shard that is not a checkpoint is one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gptj_checkpoints import SMALL, small_weights, write_pytorch_index
from one_line_errors import raised_line
from torch_needed import needs_torch

from mlperf_harness.engines.torch_gptj.checkpoint_loader import load_checkpoint
from mlperf_harness.engines.torch_gptj.module import from_weights

pytestmark = needs_torch


def test_pytorch_shards_load_as_the_weights_themselves(tmp_path: Path) -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    weights = small_weights(seed=5)
    write_pytorch_index(tmp_path, list(weights), SMALL)  # names the shards; filled below
    index = (tmp_path / "pytorch_model.bin.index.json").read_text()
    for shard in sorted(tmp_path.glob("pytorch_model-*.bin")):
        names = [n for n in weights if f'"{n}": "{shard.name}"' in index]
        torch.save({n: torch.from_numpy(weights[n].copy()) for n in names}, shard)
    cpu = torch.device("cpu")
    loaded = load_checkpoint(torch, tmp_path, cpu, "fp32")
    direct = from_weights(torch, weights, SMALL, cpu, "fp32")
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((3, SMALL.hidden), np.float32))
    assert torch.equal(loaded.logits(x), direct.logits(x))
    assert torch.equal(loaded.blocks[1].qkv_in.weight, direct.blocks[1].qkv_in.weight)
    # fp8: the checkpoint's projections quantized as the same weights given directly are
    loaded8 = load_checkpoint(torch, tmp_path, cpu, "fp8")
    direct8 = from_weights(torch, weights, SMALL, cpu, "fp8")
    for mine, theirs in zip(loaded8.blocks, direct8.blocks, strict=True):
        for layer in ("qkv_in", "out", "fc_out"):
            a, b = getattr(mine, layer), getattr(theirs, layer)
            assert a.weight8.dtype == torch.float8_e4m3fn and a.weight is None
            assert torch.equal(a.weight8.float(), b.weight8.float())
            assert torch.equal(a.scale, b.scale)
    assert torch.equal(loaded8.logits(x.half()), direct8.logits(x.half()))


def test_a_shard_that_is_no_checkpoint_is_one_line(tmp_path: Path) -> None:
    import torch  # pants: no-infer-dep

    write_pytorch_index(tmp_path, list(small_weights()), SMALL)
    (tmp_path / "pytorch_model-00001-of-00003.bin").write_bytes(b"not a zip")
    line = raised_line(load_checkpoint, torch, tmp_path, torch.device("cpu"), "fp32")
    assert "cannot read GPT-J checkpoint shard" in line
