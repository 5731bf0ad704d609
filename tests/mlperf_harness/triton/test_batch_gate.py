"""A model instance's batches run side by side, and a HOLD runs alone: after the batches running,
before any that arrive while it waits."""

from __future__ import annotations

import threading
import time

from mlperf_harness.triton.batch_gate import BatchGate


def test_batches_run_side_by_side() -> None:
    gate = BatchGate()
    both_in = threading.Barrier(2, timeout=5)

    def batch() -> None:
        with gate.batch():
            both_in.wait()  # would time out (BrokenBarrierError) if batches excluded each other

    threads = [threading.Thread(target=batch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not both_in.broken


def test_a_hold_waits_for_running_batches_and_goes_before_new_ones() -> None:
    gate = BatchGate()
    events: list[str] = []
    first_running = threading.Event()
    release_first = threading.Event()

    def first_batch() -> None:
        with gate.batch():
            first_running.set()
            release_first.wait(5)
            events.append("first batch ends")

    def hold() -> None:
        with gate.hold():
            events.append("hold")

    def later_batch() -> None:
        with gate.batch():
            events.append("later batch")

    running = threading.Thread(target=first_batch)
    running.start()
    first_running.wait(5)
    holding = threading.Thread(target=hold)
    holding.start()
    time.sleep(0.1)  # the HOLD is waiting for the first batch
    later = threading.Thread(target=later_batch)
    later.start()
    time.sleep(0.1)  # the later batch waits behind the HOLD
    assert events == []
    release_first.set()
    for thread in (running, holding, later):
        thread.join(5)
    assert events == ["first batch ends", "hold", "later batch"]
