"""Tensor parallelism across the GPUs of one host through torch.distributed (NCCL): the harness's
process is rank 0 and drives the serving loop; ranks 1.. are worker processes
(`python -m mlperf_harness.engines.torch_llama.parallel`) that hold their shard of every layer and
repeat each prefill and decode step rank 0 runs, the two all-reduces per block keeping them in
step. Rank 0 tells the workers each call (what, which slots, which tokens) by a broadcast of one
int64 tensor before running it itself; the logits are whole on every rank (lm_head is not split),
and only rank 0 chooses tokens.

WRITTEN, NEVER RUN: no multi-GPU machine was at hand while this was written. It is the layout the
issue asks for (two H100s per model); the data-parallel layout (one engine per GPU, serving.py's
loops) is what ran.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.generation.engine import Int64Array, PassThroughEngine

PREFILL, ADVANCE, RELEASE, STOP = 1, 2, 3, 4
HEADER = 4  # op, slots, tokens, padding


def _broadcast(torch: Any, device: Any, values: Sequence[int] | None, size: int) -> Any:
    """Rank 0 sends `values` (size known to all), the others receive them."""
    tensor = torch.zeros(size, dtype=torch.int64, device=device)
    if values is not None:
        tensor.copy_(torch.tensor(list(values), dtype=torch.int64))
    torch.distributed.broadcast(tensor, src=0)
    return tensor


def _send(torch: Any, device: Any, op: int, slots: Sequence[int], tokens: Sequence[int]) -> None:
    _broadcast(torch, device, [op, len(slots), len(tokens), 0], HEADER)
    if slots:
        _broadcast(torch, device, [*slots, *tokens], len(slots) + len(tokens))


class TensorParallelEngine(PassThroughEngine):
    """Rank 0's engine: every call that changes the cache goes to the workers first."""

    def __init__(self, engine: TorchLlamaEngine, workers: list[subprocess.Popen[bytes]]) -> None:
        super().__init__(engine)
        self.local = engine
        self.workers = workers

    def _tell(self, op: int, slots: Sequence[int], tokens: Sequence[int]) -> None:
        _send(self.local.torch, self.local.model.device, op, slots, tokens)

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        for slot, prompt in zip(slots, prompts, strict=True):
            self._tell(PREFILL, [slot], [int(t) for t in prompt])
            self.local.prefill([slot], [prompt])

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        self._tell(ADVANCE, list(slots), [int(t) for t in np.asarray(tokens).reshape(-1)])
        self.local.advance(slots, parents, tokens)

    def release(self, slots: Sequence[int]) -> None:
        self._tell(RELEASE, list(slots), [])
        self.local.release(slots)

    def close(self) -> None:
        if not self.workers:
            return
        try:
            self._tell(STOP, [], [])
            for worker in self.workers:
                worker.wait(timeout=60)
        except Exception:  # a group already broken: end the workers rather than wait on them
            for worker in self.workers:
                worker.kill()
        self.workers = []


def start_workers(world: int, port: int, argv: Sequence[str]) -> list[subprocess.Popen[bytes]]:
    """Ranks 1..world-1, each on its own GPU, told where rank 0 listens."""
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    return [
        subprocess.Popen(
            [sys.executable, "-m", __name__, "--rank", str(rank), "--world", str(world), *argv],
            env=env,
        )
        for rank in range(1, world)
    ]


def serve(engine: TorchLlamaEngine) -> None:
    """A worker's loop: repeat rank 0's calls until it says stop."""
    torch, device = engine.torch, engine.model.device
    while True:
        op, slot_count, token_count, _ = (int(v) for v in _broadcast(torch, device, None, HEADER))
        if op == STOP:
            return
        body = _broadcast(torch, device, None, slot_count + token_count).cpu().numpy()
        slots, tokens = body[:slot_count].tolist(), body[slot_count:]
        if op == PREFILL:
            engine.prefill(slots, [tokens.astype(np.int64)])
        elif op == ADVANCE:
            engine.advance(slots, np.zeros((len(slots), 1), np.int64), tokens.reshape(-1, 1))
        elif op == RELEASE:
            engine.release(slots)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_llama.parallel")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--slots", type=int, required=True)
    parser.add_argument("--max_prompt", type=int, required=True)
    parser.add_argument("--max_new", type=int, required=True)
    parser.add_argument("--eos_id", type=int, required=True)
    parser.add_argument("--precision", default="fp8")
    args = parser.parse_args(argv)
    from mlperf_harness.engines.torch_llama.factory import build_rank

    engine = build_rank(
        args.rank,
        args.world,
        args.slots,
        args.max_prompt,
        args.max_new,
        args.eos_id,
        args.precision,
    )
    serve(engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
