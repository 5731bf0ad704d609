"""The Llama device profile's admission measurement (device_profile.admission) on the CPU where
torch is installed: one prompt admitted alone into slot 0 of a full tiny engine, at each length;
what it leaves is what admitting that prompt leaves (its logits held, its length), and the other
slots are untouched. torch is no dependency of the CPU build, so in CI these tests are skipped."""

from __future__ import annotations

import numpy as np
from tiny_llama_engine import SHAPE, engine, workload
from torch_needed import needs_torch

from mlperf_harness.engines.torch_llama.device_profile import (
    admission,
    admission_line,
    admission_prompts,
)
from mlperf_harness.engines.torch_llama.options import EngineOptions

pytestmark = needs_torch


def test_admitting_one_prompt_alone_is_timed_and_leaves_only_its_slot_changed() -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    options = EngineOptions(prefill="packed", attention="fp8kernel", graphs=True)
    full = engine(3, options)
    prompts, _ = workload()
    full.prefill([0, 1, 2], prompts[:3])
    others = full.held[1:].clone()

    lengths = (5, 20)
    rows = admission(torch, full, lengths, on_gpu=False)

    assert [r["prompt_tokens"] for r in rows] == list(lengths)
    for row in rows:
        assert row["wall_ms"] > 0 and row["kernel_ms"] > 0 and row["host_issue_ms"] > 0, row
    last = admission_prompts(lengths, SHAPE.vocab_size)[-1]
    assert full.lengths[0] == last.size and list(full.lengths[1:]) == [p.size for p in prompts[1:3]]
    alone = engine(3, options)
    alone.prefill([0], [last])
    assert torch.equal(full.held[0], alone.held[0])
    assert torch.equal(full.held[1:], others)
    line = admission_line(rows)
    assert line.startswith("admitting one prompt: 5 tokens ") and "; 20 tokens " in line


def test_a_chunked_prefills_admission_is_what_it_adds_to_the_steps_it_joins() -> None:
    """prefill "chunked": each prompt joins the other slots' decode steps (at most 8 tokens a
    step: 20 tokens span 3); the row gives the steps and the ms added to them; slot 0 ends holding
    what a prefill of the last prompt alone holds, and the others decoded on."""
    import torch  # type: ignore[import-not-found,unused-ignore]  # pants: no-infer-dep

    options = EngineOptions(prefill="chunked", prefill_tokens=8)
    full = engine(3, options)
    prompts, _ = workload()
    full.prefill([0, 1, 2], prompts[:3])
    full.flush_prefills()
    before = full.lengths.copy()

    rows = admission(torch, full, (5, 20), on_gpu=False)

    assert [(r["prompt_tokens"], r["joined_steps"]) for r in rows] == [(5, 1), (20, 3)]
    assert all(r["kernel_ms"] != 0 and r["host_issue_ms"] != 0 for r in rows), rows
    last = admission_prompts((5, 20), SHAPE.vocab_size)[-1]
    alone = engine(3, EngineOptions(prefill="packed"))
    alone.prefill([0], [last])
    np.testing.assert_allclose(full.held[0].numpy(), alone.held[0].numpy(), rtol=1e-5, atol=1e-5)
    assert full.lengths[0] == last.size and (full.lengths[1:] > before[1:]).all()
    line = admission_line(rows)
    assert line.startswith("admitting one prompt (ms added to the steps it joins): 5 tokens ")
    assert "20 tokens " in line and ", 3 steps)" in line


def test_the_admitted_prompts_are_seeded_and_inside_the_vocabulary() -> None:
    first, again = admission_prompts((7, 9), 50), admission_prompts((7, 9), 50)
    assert [p.size for p in first] == [7, 9]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert all(p.min() >= 3 and p.max() < 50 for p in first)
