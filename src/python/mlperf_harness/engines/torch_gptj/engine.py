"""TorchGptjEngine: generation/engine.py's DecoderEngine for GPT-J on one GPU (or, for the tests, the
CPU), over a KV cache allocated once (`cache_layout`: each slot's prompt stored once and shared by
its beams, each beam's generated tokens in columns named by an ancestry table).

- prefill: several prompts packed into one forward (no padding; chunks of at most
  `prefill_tokens`), causal attention per prompt (FlashAttention's varlen kernel on the GPU), each
  prompt's keys and values written into its slot; the last position's logits held for every beam
  row of the slot.
- candidates: on the device, log-softmax of each slot's held logits per beam row, EOS blocked where
  asked, plus the beams' scores, top k over beams x vocab; only [n, k] scores, tokens and parents
  come back to the host.
- advance: one int64 array up (tokens, parents, step index per slot), then the decode step over
  every row: the ancestry reordered by parents (a gather of a few integers: no key or value moves),
  the new token's keys and values written at its step's column, attention over the shared prompt
  and the beam's own history (attention.py's two parts merged by log-sum-exp, or on a GPU with
  Triton, where it times fastest, decode_kernel.py's one kernel), the logits held. On a GPU the
  step is a CUDA graph captured for a few slot counts (all slots, and halvings of it): a step
  covers the smallest count holding every live slot, so a draining batch stops paying for its
  empty slots' GEMM rows.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from mlperf_harness.engines.gpu_timing import gpu_ms
from mlperf_harness.engines.graph_buckets import graph_slot_counts
from mlperf_harness.engines.torch_gptj import attention
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout
from mlperf_harness.engines.torch_gptj.module import TorchGptj
from mlperf_harness.engines.torch_gptj.slots import SlotBook
from mlperf_harness.engines.uploads import copy_into, to_device
from mlperf_harness.engines.varlen_attention import (
    flash_available,
    prefill_attention,
    token_groups,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import BoolArray, Candidates, Float32Array, Int64Array

DEFAULT_PREFILL_TOKENS = 8192
# The named ranges (torch.profiler.record_function) around the parts of a decode step and of a
# prefill: device_profile.py reads the GPU time of each part from them. A range costs the host a
# microsecond or two when no profiler runs, and nothing in a CUDA graph's replay.
PART = "gptj."


class TorchGptjEngine:
    joins_prefill = False  # each prefill runs when called (DecoderEngine)
    prefilling: frozenset[int] = frozenset()

    def __init__(
        self,
        model: TorchGptj,
        layout: CacheLayout,
        eos_id: int,
        cuda_graphs: bool | None = None,
        prefill_tokens: int = DEFAULT_PREFILL_TOKENS,
    ) -> None:
        torch = model.torch
        shape = model.shape
        layout.check(shape)
        if not 0 <= eos_id < shape.vocab_size:
            raise HarnessError(f"EOS id {eos_id} is outside the vocabulary of {shape.vocab_size}")
        self.torch, self.model, self.layout, self._eos = torch, model, layout, eos_id
        self.prefill_tokens = max(prefill_tokens, layout.max_prompt)
        self.book = SlotBook(layout.slots, layout.beams, layout.max_prompt, layout.max_new)
        device, dtype = model.device, model.dtype
        self.flash = flash_available(torch, device, dtype)
        self.on_gpu = getattr(device, "type", str(device)) == "cuda"
        # The decode step's attention kernel, chosen by timing when the graphs are captured (a
        # GPU in fp16/bf16): "flash" or "efficient" for the prompt part (attention.py), or one of
        # decode_kernel.TILES's names for the one Triton kernel of both parts; "dense" elsewhere.
        self.prompt_kernel = "flash" if self.flash else "dense"
        self.triton = (
            self.on_gpu
            and dtype in (torch.float16, torch.bfloat16)
            and importlib.util.find_spec("triton") is not None
        )
        self.multiprocessors = (
            torch.cuda.get_device_properties(device).multi_processor_count if self.on_gpu else 1
        )
        self.kernel_step_ms: dict[str, float] = {}
        s, b, p, g = layout.slots, layout.beams, layout.max_prompt, layout.max_new
        h, d = shape.heads, shape.head_dim
        columns = layout.generated_columns

        def zeros(*dims: int, dtype: Any = dtype) -> Any:
            return torch.zeros(dims, device=device, dtype=dtype)

        self.prompt_k = [zeros(s, p, h, d) for _ in range(shape.layers)]
        self.prompt_v = [zeros(s, p, h, d) for _ in range(shape.layers)]
        self.gen_k = [zeros(s, h, columns, d) for _ in range(shape.layers)]
        self.gen_v = [zeros(s, h, columns, d) for _ in range(shape.layers)]
        self.ancestry = zeros(s, b, g + 1, dtype=torch.int64)
        self.prompt_lengths = torch.ones(s, device=device, dtype=torch.int32)
        self.held = zeros(s * b, shape.vocab_size, dtype=torch.float32)
        self.step_in = zeros(s, 2 * b + 1, dtype=torch.int64)
        self._beam_ids = torch.arange(b, device=device)
        self._steps = torch.arange(g + 1, device=device)
        self._cu_q = torch.arange(s + 1, device=device, dtype=torch.int32) * b
        self._cu_k = torch.arange(s + 1, device=device, dtype=torch.int32) * p
        self.graphs: dict[int, Any] = {}
        use_graphs = self.on_gpu if cuda_graphs is None else cuda_graphs
        if use_graphs:
            self._capture()

    # --- DecoderEngine ---------------------------------------------------------------------

    @property
    def slots(self) -> int:
        return self.layout.slots

    @property
    def beams(self) -> int:
        return self.layout.beams

    @property
    def max_length(self) -> int:
        return self.layout.max_prompt + self.layout.max_new

    @property
    def eos_id(self) -> int:
        return self._eos

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        if len(slots) != len(prompts):
            raise HarnessError(f"prefill: {len(slots)} slots for {len(prompts)} prompts")
        vocab = self.model.shape.vocab_size
        for prompt in prompts:
            if prompt.ndim != 1 or prompt.size == 0:
                raise HarnessError("prefill: a prompt must be a non-empty 1-D array of token ids")
            if prompt.min() < 0 or prompt.max() >= vocab:
                raise HarnessError(f"prefill: a token id outside the vocabulary of {vocab}")
        self.book.check_slots(slots, "prefill", live=False)
        lengths = [int(prompt.size) for prompt in prompts]
        for length in lengths:
            if length > self.layout.max_prompt:
                raise HarnessError(
                    f"prefill: a prompt of {length} tokens; this engine holds at most "
                    f"{self.layout.max_prompt}"
                )
        for group in token_groups(lengths, self.prefill_tokens):
            self._prefill_group([slots[j] for j in group], [prompts[j] for j in group])
        self.book.fill(slots, lengths)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        torch, b, vocab = self.torch, self.layout.beams, self.model.shape.vocab_size
        self.book.check_slots(slots, "candidates", live=True)
        n = len(slots)
        if beam_scores.shape != (n, b) or block_eos.shape != (n,):
            raise HarnessError(
                f"candidates: beam_scores {beam_scores.shape} must be {(n, b)} and block_eos "
                f"{block_eos.shape} {(n,)}"
            )
        if not 1 <= k <= b * vocab:
            raise HarnessError(f"candidates: k {k} is not in 1..{b * vocab}")
        if n == 0:
            empty = np.zeros((0, k), np.int64)
            return Candidates(np.zeros((0, k), np.float32), empty, empty.copy())
        device = self.model.device
        rows = (
            to_device(torch, np.asarray(slots, np.int64), device)[:, None] * b
            + self._beam_ids[None, :]
        ).reshape(-1)
        scores = torch.log_softmax(self.held[rows], dim=-1).view(n, b, vocab)
        blocked = to_device(torch, np.asarray(block_eos, bool), device)
        eos = scores[:, :, self._eos]
        scores[:, :, self._eos] = torch.where(blocked[:, None], float("-inf"), eos)
        scores = scores + to_device(torch, beam_scores, device)[:, :, None]
        values, index = torch.topk(scores.view(n, b * vocab), k, dim=-1, sorted=True)
        # Equal scores: the lower flat index first, as a stable sort over beams x vocab gives.
        index, order = torch.sort(index, dim=-1, stable=True)
        values = values.gather(1, order)
        values, order = torch.sort(values, dim=-1, descending=True, stable=True)
        index = index.gather(1, order)
        parents, tokens = torch.div(index, vocab, rounding_mode="floor"), index % vocab
        return Candidates(
            values.cpu().numpy(),
            tokens.cpu().numpy().astype(np.int64),
            parents.cpu().numpy().astype(np.int64),
        )

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        vocab = self.model.shape.vocab_size
        if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
            raise HarnessError(f"advance: a token id outside the vocabulary of {vocab}")
        step = self.book.step_input(
            slots, np.asarray(parents, np.int64), np.asarray(tokens, np.int64)
        )
        if not len(slots):
            return
        copy_into(self.torch, self.step_in, step)
        covered = self.book.highest_live()
        if self.graphs:
            count = min(c for c in self.graphs if c >= covered)
            self.graphs[count].replay()
        else:
            self._decode(covered)

    def release(self, slots: Sequence[int]) -> None:
        self.book.release(slots)

    # --- the work --------------------------------------------------------------------------

    def _part(self, name: str) -> Any:
        return self.torch.profiler.record_function(PART + name)

    def _prefill_group(self, slots: list[int], prompts: list[Int64Array]) -> None:
        torch, model, p = self.torch, self.model, self.layout.max_prompt
        device = model.device
        lengths = [int(prompt.size) for prompt in prompts]
        ids = to_device(torch, np.concatenate(prompts).astype(np.int64), device)
        positions = to_device(
            torch, np.concatenate([np.arange(n, dtype=np.int64) for n in lengths]), device
        )
        destination = to_device(
            torch,
            np.concatenate(
                [
                    slot * p + np.arange(n, dtype=np.int64)
                    for slot, n in zip(slots, lengths, strict=True)
                ]
            ),
            device,
        )
        cu = to_device(torch, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32), device)
        shape = model.shape
        with self._part("embed"):
            x = model.embed(ids)
        for layer, block in enumerate(model.blocks):
            with self._part("project"):
                q, k, v, inner = model.project(x, block, positions)
            with self._part("kv_write"):
                flat = (self.layout.slots * p, shape.heads, shape.head_dim)
                self.prompt_k[layer].view(flat).index_copy_(0, destination, k)
                self.prompt_v[layer].view(flat).index_copy_(0, destination, v.contiguous())
            with self._part("prefill_attention"):
                context = prefill_attention(
                    torch, q.contiguous(), k.contiguous(), v.contiguous(), cu, lengths, self.flash
                )
            with self._part("finish"):
                x = model.finish(x, block, context, inner)
        with self._part("lm_head"):
            last = cu[1:].to(torch.int64) - 1
            logits = model.logits(x[last])  # [prompts, vocab]
            b = self.layout.beams
            slot_rows = to_device(torch, np.asarray(slots, np.int64), device)
            rows = slot_rows[:, None] * b + self._beam_ids[None, :]
            self.held[rows.reshape(-1)] = logits.repeat_interleave(b, dim=0)
        self.prompt_lengths[slot_rows] = to_device(torch, np.asarray(lengths, np.int32), device)

    def _decode(self, count: int) -> None:
        """One decode step over slots 0..count-1 (what a graph captures for `count`)."""
        torch, model = self.torch, self.model
        b, g = self.layout.beams, self.layout.max_new
        n, rows = count, count * b
        with self._part("step_setup"):  # the ancestry reordered, masks, positions, embedding
            step = self.step_in[:n]
            tokens, parents, at = step[:, :b], step[:, b : 2 * b], step[:, 2 * b]
            ancestry = self.ancestry[:n]
            reordered = torch.gather(ancestry, 1, parents[:, :, None].expand(n, b, g + 1))
            reordered.scatter_(
                2, at[:, None, None].expand(n, b, 1), self._beam_ids[None, :, None].expand(n, b, 1)
            )
            ancestry.copy_(reordered)
            # column t * beams + b' is visible to beam b where its ancestry at step t is b',
            # t <= now
            visible = (reordered[:, :, :, None] == self._beam_ids) & (
                self._steps[None, None, :, None] <= at[:, None, None, None]
            )
            visible = visible.reshape(n, b, (g + 1) * b)
            lengths = self.prompt_lengths[:n]
            positions = (lengths.to(torch.int64)[:, None] + at[:, None]).expand(n, b).reshape(rows)
            positions = positions.clamp(max=model.positions - 1)
            columns = (at[:, None] * b + self._beam_ids[None, :]).reshape(rows)
            slot_of_row = torch.arange(n, device=model.device)[:, None].expand(n, b).reshape(rows)
            x = model.embed(tokens.reshape(rows))
            fused = None
            if self.prompt_kernel.startswith("triton"):
                from mlperf_harness.engines.torch_gptj import decode_kernel

                tiles = decode_kernel.TILES[self.prompt_kernel]
                blocks = decode_kernel.key_blocks(
                    self.layout.max_prompt, self.layout.generated_columns, tiles
                )
                splits = decode_kernel.split_count(
                    n, model.shape.heads, blocks, self.multiprocessors
                )
                used = ((at + 1) * b).to(torch.int32)  # no visible column is at or past it
                fused = (tiles, splits, used)
        for layer, block in enumerate(model.blocks):
            with self._part("project"):
                q, k, v, inner = model.project(x, block, positions)
                q = q.contiguous()
            with self._part("kv_write"):
                gen_k, gen_v = self.gen_k[layer][:n], self.gen_v[layer][:n]
                gen_k[slot_of_row, :, columns] = k
                gen_v[slot_of_row, :, columns] = v
            context = self._attention(layer, n, q, gen_k, gen_v, visible, fused)
            with self._part("finish"):
                x = model.finish(x, block, context, inner)
        with self._part("lm_head"):
            logits = model.logits(x)
            # (no repeat_interleave: its output size would be read back, which a capture forbids)
            advanced = (at < g)[:, None].expand(n, b).reshape(rows, 1)
            held = self.held[:rows]
            held.copy_(torch.where(advanced, logits, held))

    def _attention(
        self, layer: int, n: int, q: Any, gen_k: Any, gen_v: Any, visible: Any, fused: Any
    ) -> Any:
        """A layer's attention over slots 0..n-1: the one Triton kernel where `fused` gives its
        (tiles, splits, generated columns in use), else the prompt part by `prompt_kernel` and the
        generated part, merged."""
        torch, lengths = self.torch, self.prompt_lengths[:n]
        prompt_k, prompt_v = self.prompt_k[layer][:n], self.prompt_v[layer][:n]
        if fused is not None:
            from mlperf_harness.engines.torch_gptj import decode_kernel

            tiles, splits, used = fused
            with self._part("decode_kernel"):  # both parts in one Triton kernel
                return decode_kernel.decode_attention(
                    torch,
                    q,
                    prompt_k,
                    prompt_v,
                    lengths,
                    gen_k,
                    gen_v,
                    visible,
                    used,
                    splits,
                    tiles,
                )
        with self._part("prompt_attention"):
            if self.prompt_kernel in ("flash", "efficient"):
                run = (
                    attention.prompt_attention_flash
                    if self.prompt_kernel == "flash"
                    else attention.prompt_attention_efficient
                )
                first = run(
                    torch, q, prompt_k, prompt_v, lengths, self._cu_q[: n + 1], self._cu_k[: n + 1]
                )
            else:
                first = attention.prompt_attention_dense(torch, q, prompt_k, prompt_v, lengths)
        with self._part("generated_attention"):
            second = attention.generated_attention(torch, q, gen_k, gen_v, visible)
        with self._part("merge"):
            return attention.merge(torch, first, second)

    def _capture(self) -> None:
        """CUDA graphs of the decode step per slot count (graph_slot_counts), sharing one memory
        pool: they never run at once, and each writes only the engine's own buffers. The
        attention kernels at hand (FlashAttention's and the memory-efficient one for the prompt
        part, the one Triton kernel in each of its tilings) are timed first on the full step
        (every slot's prompt half the region long; every slot on the scratch step, so the Triton
        kernel reads all generated columns, as the others always do) and the fastest kept."""
        candidates = ["efficient", "flash"] if self.flash else []
        if self.triton:
            from mlperf_harness.engines.torch_gptj import decode_kernel

            candidates += list(decode_kernel.TILES)
        if candidates:
            lengths = self.prompt_lengths.clone()
            self.prompt_lengths.fill_(max(1, self.layout.max_prompt // 2))
            for kernel in candidates:
                self.prompt_kernel = kernel
                try:
                    if kernel.startswith("triton") and self._triton_disagrees(kernel):
                        continue
                    self._capture_graphs([self.layout.slots])
                    self.kernel_step_ms[kernel] = gpu_ms(
                        self.torch, self.graphs[self.layout.slots].replay, 5
                    )
                except Exception as error:  # a kernel this torch or GPU lacks: the others
                    print(f"torch_gptj: {kernel} attention unavailable: {error}", file=sys.stderr)
                self.graphs.clear()
            self.prompt_lengths.copy_(lengths)
            if self.kernel_step_ms:
                self.prompt_kernel = min(self.kernel_step_ms, key=self.kernel_step_ms.__getitem__)
            else:
                self.prompt_kernel = "dense"
        self._capture_graphs(graph_slot_counts(self.layout.slots))

    def _triton_disagrees(self, kernel: str) -> bool:
        """Whether the Triton tiling `kernel` computes otherwise than attention.py's reference on
        this GPU (decode_kernel_check), said in a line: then it is not timed, so never chosen."""
        from mlperf_harness.engines.torch_gptj import decode_kernel, decode_kernel_check

        shape = self.model.shape
        said = decode_kernel_check.disagreement(
            self.torch,
            self.model.device,
            self.model.dtype,
            shape.heads,
            shape.head_dim,
            self.layout.beams,
            decode_kernel.TILES[kernel],
        )
        if said is not None:
            print(f"torch_gptj: {kernel} attention left out: {said}", file=sys.stderr)
        return said is not None

    def _capture_graphs(self, counts: list[int]) -> None:
        torch = self.torch
        # Every slot scratch: warm-up and capture write nothing a sample will read.
        none = np.zeros((0, self.beams), np.int64)
        copy_into(torch, self.step_in, self.book.step_input([], none, none))
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for count in counts:
                self._decode(count)  # warm-up: kernels chosen, workspaces allocated
        torch.cuda.current_stream().wait_stream(stream)
        pool = torch.cuda.graph_pool_handle()
        for count in sorted(counts, reverse=True):  # the largest first: the pool sized once
            graph = torch.cuda.CUDAGraph()
            # On this engine's stream: torch's default capture stream is made once, on the GPU
            # current at the first capture, so a second GPU's engine would capture on GPU 0's.
            # "thread_local": another thread's CUDA calls (a serving loop already running on
            # another GPU) must not break this capture (torch_llama/static_step.py).
            with torch.cuda.graph(
                graph, pool=pool, stream=stream, capture_error_mode="thread_local"
            ):
                self._decode(count)
            self.graphs[count] = graph
        torch.cuda.synchronize()
