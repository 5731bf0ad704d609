"""A DecoderEngine in a process of its own (`--engine_processes`): the serving loop keeps its
scheduler in the harness's process and calls the engine over a pipe.

Why: a host's serving loops are threads of one process, and each engine's host work (above all a
prefill's eager kernel launches) holds the interpreter's lock, so two GPUs' engines can wait on
each other. In a process of its own an engine's calls run beside the other engines', and the
harness's thread waits on the pipe without the lock. On two H200s GPT-J ran 45.47 samples/s this
way against 44.56 in one process, in the one call that compared them: within the spread between
calls, so it is off by default (docs/performance.md#gpt-j).

A call is one pickled message each way (its arrays are a step's slots, scores and tokens: small).
The process is `python -m mlperf_harness.generation.engine_process`, on the harness's import path;
it makes its engine from the maker it is sent (which must pickle: a module-level function or a
functools.partial of one), answers each call, and ends when told to close or when the harness's
end closes its pipe (or the harness dies: the kernel ends it). An error in a call is printed there
with its traceback and raised here in one line; a process that dies is one line too.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any

from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import (
    BoolArray,
    Candidates,
    DecoderEngine,
    Float32Array,
    Int64Array,
    close_engine,
)

MAKE, CLOSE = "make", "close"
CALLS = frozenset({"prefill", "candidates", "advance", "release"})  # DecoderEngine's


class EngineProcess:
    """The engine `make` makes, made and run in a child process; `name` says which in errors."""

    # Its prefills run when called: an engine behind it that joins them to its decode steps runs a
    # queued prompt at `candidates` instead (TorchLlamaEngine), correct but not joined.
    joins_prefill = False
    prefilling: frozenset[int] = frozenset()

    def __init__(self, make: Callable[[], DecoderEngine], name: str = "engine") -> None:
        # The Triton server's helpers: the same import path in the child (a PEX's too), and the
        # child ended by the kernel when the harness dies.
        from mlperf_harness.triton.server_process import die_with_parent, server_environment

        self.name = name
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=server_environment(),
            preexec_fn=die_with_parent,
        )
        try:
            self.slots, self.beams, self.max_length, self.eos_id = self._call(MAKE, make)
        except HarnessError:
            self._end()  # a maker that failed leaves no process waiting for calls
            raise

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        self._call("prefill", list(slots), list(prompts))

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        return self._call("candidates", list(slots), beam_scores, block_eos, k)  # type: ignore[no-any-return]

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        self._call("advance", list(slots), parents, tokens)

    def release(self, slots: Sequence[int]) -> None:
        self._call("release", list(slots))

    def close(self) -> None:
        """Closes the child's engine and waits for the child's end (once; later calls do nothing)."""
        if self._process.poll() is None:
            try:
                self._call(CLOSE)
            finally:
                self._end()

    def _end(self) -> None:
        """Close the child's pipe (its end of calls) and wait for it."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait()

    def _call(self, op: str, *args: Any) -> Any:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            pickle.dump((op, args), process.stdin, pickle.HIGHEST_PROTOCOL)
            process.stdin.flush()
            ok, value = pickle.load(process.stdout)
        except (BrokenPipeError, EOFError):
            code = process.wait()
            raise HarnessError(
                f"{self.name}'s process (pid {process.pid}) exited with code {code} during its"
                f" {op} call"
            ) from None
        if not ok:
            raise HarnessError(f"{self.name}'s process: {op} failed: {value}")
        return value


def serve(calls: IO[bytes], answers: IO[bytes]) -> int:
    """The child's loop: make the engine, answer each call, end at close or at the pipe's end."""
    engine: Any = None
    while True:
        try:
            op, args = pickle.load(calls)
        except EOFError:  # the harness closed the pipe (or ended) without closing the engine
            return 0
        try:
            if op == MAKE:
                engine = args[0]()
                value: Any = (engine.slots, engine.beams, engine.max_length, engine.eos_id)
            elif op == CLOSE:
                close_engine(engine)
                value = None
            elif op in CALLS and engine is not None:
                value = getattr(engine, op)(*args)
            else:
                raise HarnessError(f"unknown call {op!r} (or no engine made yet)")
            reply = (True, value)
        except Exception as error:
            traceback.print_exc()
            reply = (False, f"{type(error).__name__}: {error}")
        pickle.dump(reply, answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()
        if op == CLOSE:
            return 0


def main() -> int:
    # The pipe to the harness is this process's stdout: anything else printed (an engine's
    # progress, a library's warning) goes to stderr instead of into the answers.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    raise SystemExit(main())
