"""Tensor parallelism across the devices of one host through torch.distributed: the harness's
process is rank 0 and drives the serving loop; ranks 1.. are worker processes
(`python -m mlperf_harness.engines.torch_llama.parallel`) that hold their shard of every layer and
repeat each prefill and decode step rank 0 runs, the two all-reduces per block keeping them in
step. Rank 0 tells the workers each call (what, which slots, which prompts or tokens) by two
broadcasts of int64 CPU tensors (a header of fixed size, then the body) over a gloo group beside
NCCL's before running it itself (so a worker learns of a call at once and queues its share while
the GPUs still run the last one: NCCL's broadcast, stream-ordered, would reach it only after rank
0's GPU had done all it had queued); the
workers build their engine with rank 0's options (`EngineOptions.text`), so a packed prefill or a
fixed-shape step makes the same forwards, of the same shapes, on every rank. The logits are whole
on every rank (lm_head is not split), and only rank 0 chooses tokens.

Where the ranks run is chosen once (factory.rank_device): CUDA GPU `first_gpu + rank` (the group's
own GPUs: a host of four runs two groups of two) with NCCL, or the CPU with gloo where no GPU is.

A worker that exits while rank 0 needs it ends the run with one line: gloo notices at once (the
collective fails; rank 0 waits a moment for the worker's exit status and raises a HarnessError
naming the rank and its exit); where a collective could wait for ever (rank 0 still joining the
group; NCCL's collectives, which were not run), rank 0's watch ends its process GRACE_SECONDS
later with that line. A worker whose rank 0 is gone ends itself with one line. A worker's own
failure (a HarnessError) is one line from the worker, then rank 0's.

Leaving the group: NCCL's destroy is collective and waits while CUDA graphs that captured the
communicator's all-reduces live, so at STOP every rank first drops its graphs, then all leave
together (on two H200s, leaving otherwise waited for ever on both ranks).

What ran (docs/llama2-70b.md): on the CPU with gloo, 2 and 4 ranks of a small seeded Llama in
float32, greedy tokens equal to one process's and the NumPy model's with in-flight batching, and
over 2 ranks under each of the 12 engine option sets
(tests/.../torch_llama/test_llama_tensor_parallel_with_torch.py); a worker killed mid-run or before
joining, and rank 0 killed, each ending in its one line. On two H200s with NCCL (device_check.py
--tensor_parallel 2): the tiny Llama's tokens equal the NumPy model's (16 of 16 prompts, eager and
with the all-reduces captured in CUDA graphs), and the real-size stand-in timed over both GPUs.
NOT RUN on GPUs: a worker's death under NCCL, a run through the harness.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_llama.engine import TorchLlamaEngine
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import (
    BoolArray,
    Candidates,
    Float32Array,
    Int64Array,
    PassThroughEngine,
)
from mlperf_harness.triton.server_process import server_environment

PREFILL, ADVANCE, RELEASE, STOP, FLUSH = 1, 2, 3, 4, 5
HEADER = 3  # op, slots, tokens; the body: slots, each one's token count, the tokens
POLL_SECONDS = 0.2
EXIT_SECONDS = 5.0  # a collective that failed: how long rank 0 waits for a worker's exit status
GRACE_SECONDS = 10.0  # a worker gone while rank 0 waits in a call: then rank 0's process ends
STOP_SECONDS = 60.0


def _broadcast(torch: Any, group: Any, values: Sequence[int] | None, size: int) -> Any:
    """Rank 0 sends `values` (size known to all), the others receive them: CPU tensors over the
    group's own transport (factory.build_rank: gloo beside NCCL)."""
    tensor = torch.zeros(size, dtype=torch.int64)
    if values is not None:
        tensor.copy_(torch.tensor(list(values), dtype=torch.int64))
    torch.distributed.broadcast(tensor, src=0, group=group)
    return tensor


def send(
    torch: Any, group: Any, op: int, slots: Sequence[int], lengths: Sequence[int],
    tokens: Sequence[int],
) -> None:  # fmt: skip
    _broadcast(torch, group, [op, len(slots), len(tokens)], HEADER)
    body = [*slots, *lengths, *tokens]
    if body:  # the receiver skips an empty body too
        _broadcast(torch, group, body, len(body))


def receive(torch: Any, group: Any) -> tuple[int, list[int], list[int], Int64Array]:
    op, count, token_count = (int(v) for v in _broadcast(torch, group, None, HEADER))
    size = 2 * count + token_count
    body = _broadcast(torch, group, None, size).numpy() if size else np.zeros(0, np.int64)
    return op, body[:count].tolist(), body[count : 2 * count].tolist(), body[2 * count :]


def exit_text(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"code {code}"


class Workers:
    """Ranks 1..world-1 as child processes of rank 0, watched (the module's docstring)."""

    def __init__(self, processes: list[subprocess.Popen[bytes]], port: int) -> None:
        self.processes, self.port = processes, port
        self.failure: str | None = None  # set once a worker is gone: every later call says it
        self.busy: str | None = None  # the call under way
        self.closing = False
        threading.Thread(target=self._watch, name="tensor-parallel-watch", daemon=True).start()

    def gone(self) -> str | None:
        for rank, process in enumerate(self.processes, start=1):
            code = process.poll()
            if code is not None:
                return (
                    f"tensor parallel: rank {rank} (pid {process.pid}) exited with "
                    f"{exit_text(code)}; the run ends"
                )
        return None

    def _watch(self) -> None:
        while not self.closing:
            why = self.gone()
            if why is None:
                time.sleep(POLL_SECONDS)
                continue
            self.failure = self.failure or why
            deadline = time.monotonic() + GRACE_SECONDS
            while self.busy and time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)
            busy = self.busy
            if busy and not self.closing:  # a collective waits on it and will not return
                print(f"{why} (rank 0 was {busy})", file=sys.stderr, flush=True)
                os._exit(1)
            return

    @contextlib.contextmanager
    def call(self, what: str) -> Iterator[None]:
        """Rank 0's side of one call the workers share: refused where a worker is gone; where it
        fails, the workers (waiting on rank 0) are ended, and a worker's exit is the one line."""
        if self.failure:
            raise HarnessError(self.failure)
        self.busy = what
        try:
            yield
        except BaseException as error:
            deadline = time.monotonic() + EXIT_SECONDS
            why = self.gone()
            while (
                why is None
                and time.monotonic() < deadline
                and not isinstance(error, (HarnessError, KeyboardInterrupt))
            ):  # a peer's death reaches the collective before its exit status is readable
                time.sleep(POLL_SECONDS)
                why = self.gone()
            self.failure = why or f"tensor parallel: rank 0 failed while {what}"
            self.end()
            if why is not None and not isinstance(error, HarnessError):
                raise HarnessError(why) from error
            raise
        finally:
            self.busy = None

    def end(self) -> None:
        """Kill what still runs (workers waiting on a rank 0 that will not come) and leave the
        group where that cannot hang (leave_group)."""
        self.closing = True
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        leave_group(peers_left=False)

    def stop(self, torch: Any, control: Any) -> None:
        """Tell the workers to stop, leave the group with them, and wait for them; kill them if
        that fails."""
        if self.closing:
            return
        self.closing = True
        if self.failure is None:  # else the group is broken: the workers left wait for ever
            try:
                send(torch, control, STOP, [], [], [])
                leave_group()  # while the workers leave theirs: NCCL's leaving waits for every rank
                for process in self.processes:
                    process.wait(timeout=STOP_SECONDS)
            except Exception:  # a group broken now, a worker that does not stop: end them
                pass
        self.end()


def leave_group(peers_left: bool = True) -> None:
    """Leave this process's group. NCCL's destroy is collective (it waits until every rank
    destroys: a rank 0 that left after its workers had exited waited for ever on an H200 host), so
    every rank leaves at once, at STOP; where the peers are gone or killed (`peers_left` False) an
    NCCL group is left as it is, the process ending with the run; gloo's leaves at any time."""
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    if not torch.distributed.is_initialized():
        return
    if peers_left or torch.distributed.get_backend() != "nccl":
        torch.distributed.destroy_process_group()


class TensorParallelEngine(PassThroughEngine):
    """Rank 0's engine: every call that changes the cache is checked here, then told to the
    workers, then run; `candidates` is rank 0's alone, but for the queued prompts of a chunked
    prefill that it must run first: every rank runs them (FLUSH)."""

    def __init__(self, engine: TorchLlamaEngine, workers: Workers) -> None:
        super().__init__(engine)
        self.local = engine
        self.workers = workers

    def _tell(self, op: int, slots: Sequence[int], lengths: Sequence[int], tokens: Any) -> None:
        flat = [int(t) for t in np.asarray(tokens, np.int64).reshape(-1)]
        send(
            self.local.torch,
            self.local.model.parallel.control,
            op,
            list(slots),
            list(lengths),
            flat,
        )

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        self.local.check_prefill(slots, prompts)
        if not len(slots):
            return
        with self.workers.call("prefilling"):
            lengths = [int(prompt.size) for prompt in prompts]
            self._tell(PREFILL, slots, lengths, np.concatenate(prompts))
            self.local.prefill(slots, prompts)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        if self.local.prefilling & set(slots):  # chunked prefill: the queued prompts on every rank
            with self.workers.call("prefilling"):
                self._tell(FLUSH, [], [], [])
                self.local.flush_prefills()
        return self.local.candidates(slots, beam_scores, block_eos, k)

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        if not len(slots) and not self.local.prefilling:
            return
        self.local.check_advance(slots, parents, tokens)
        with self.workers.call("decoding"):
            self._tell(ADVANCE, slots, [1] * len(slots), tokens)
            self.local.advance(slots, parents, tokens)

    def release(self, slots: Sequence[int]) -> None:
        self.local.check_release(slots)
        if not len(slots):
            return
        with self.workers.call("releasing"):
            self._tell(RELEASE, slots, [0] * len(slots), [])
            self.local.release(slots)

    def close(self) -> None:
        if not self.workers.closing:
            self.local.drop_graphs()  # the workers drop theirs at STOP: then the group is left
        self.workers.stop(self.local.torch, self.local.model.parallel.control)


def start_workers(world: int, argv: Sequence[str]) -> Workers:
    """Ranks 1..world-1, told where rank 0 will listen (a free port of 127.0.0.1); their output is
    rank 0's."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [sys.executable, "-m", __name__, "--world", str(world), "--port", str(port), *argv]
    processes = [
        subprocess.Popen([*command, "--rank", str(rank)], env=server_environment())
        for rank in range(1, world)
    ]
    return Workers(processes, port)


def serve(engine: TorchLlamaEngine) -> None:
    """A worker's loop: repeat rank 0's calls until it says stop."""
    torch, control = engine.torch, engine.model.parallel.control
    while True:
        op, slots, lengths, tokens = receive(torch, control)
        if op == STOP:
            engine.drop_graphs()  # as rank 0 does: then every rank leaves the group
            return
        if op == PREFILL:
            ends = np.cumsum(lengths)[:-1]
            engine.prefill(slots, np.split(tokens.astype(np.int64), ends))
        elif op == ADVANCE:
            engine.advance(slots, np.zeros((len(slots), 1), np.int64), tokens.reshape(-1, 1))
        elif op == RELEASE:
            engine.release(slots)
        elif op == FLUSH:
            engine.flush_prefills()
        else:
            raise HarnessError(f"tensor parallel: rank 0 sent an unknown call {op}")


def watch_parent(rank: int) -> int:
    """End this worker with one line once rank 0 (its parent, whose pid this returns) is gone: a
    collective would wait on it for ever."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        orphaned(rank, parent)

    threading.Thread(target=watch, name="rank-0-watch", daemon=True).start()
    return parent


_ORPHANED = threading.Lock()


def orphaned(rank: int, parent: int) -> None:
    """One line (once, whichever thread saw it first), then the end of this worker."""
    if _ORPHANED.acquire(blocking=False):
        print(f"torch_llama.parallel rank {rank}: rank 0 (pid {parent}) is gone; ending",
              file=sys.stderr, flush=True)  # fmt: skip
        os._exit(1)
    time.sleep(STOP_SECONDS)  # the other thread is ending the process


def rank_0_gone(parent: int) -> bool:
    """Whether rank 0 has ended (a collective that failed: its exit may take a moment to show)."""
    deadline = time.monotonic() + EXIT_SECONDS
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    return os.getppid() != parent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_llama.parallel")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--device", choices=("cuda", "cpu"), required=True)
    parser.add_argument("--first_gpu", type=int, default=0, help="the group's first GPU (cuda)")
    parser.add_argument("--slots", type=int, required=True)
    parser.add_argument("--max_prompt", type=int, required=True)
    parser.add_argument("--max_new", type=int, required=True)
    parser.add_argument("--eos_id", type=int, required=True)
    parser.add_argument("--precision", default="fp8")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--small", help="a small Llama's shape as JSON (factory.ModelSource)")
    parser.add_argument("--options", default="", help="the engine's options (options.py)")
    args = parser.parse_args(argv)
    parent = watch_parent(args.rank)
    from mlperf_harness.engines.torch_llama.factory import ModelSource, build_rank
    from mlperf_harness.engines.torch_llama.options import EngineOptions

    try:
        engine = build_rank(
            args.rank, args.world, args.slots, args.max_prompt, args.max_new, args.eos_id,
            ModelSource.from_argv(args.precision, args.seed, args.small),
            EngineOptions.parse(args.options), args.device, args.port, args.first_gpu,
        )  # fmt: skip
        serve(engine)
    except HarnessError as error:
        print(f"torch_llama.parallel rank {args.rank}: {error}", file=sys.stderr, flush=True)
        return 1
    except Exception:  # the group broken by rank 0's end is no bug of this worker's: one line
        if rank_0_gone(parent):
            orphaned(args.rank, parent)
        raise
    leave_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
