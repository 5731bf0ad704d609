"""rnnt.server_model, the H200 Server model the GPU configs' Server settings were chosen with: its
batching rule (the native DynamicBatcher's), its call times, its calibration to the measured raw
Offline rate, and that it reproduces what a device run measured of the old settings (a fifth of
Offline) where the configs' length queues serve far more within the bound."""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections import deque

import numpy as np
import pytest

from mlperf_harness.benchmarks.rnnt import configs, server_model
from mlperf_harness.benchmarks.rnnt.server_model import (
    RAW_OFFLINE,
    Policy,
    call_ms_alone,
    contention,
    offline_batches,
    parse_policy,
    real_size_lengths,
    server_run,
    take_batch,
)

ARRIVALS = np.array([0.0, 1.0, 2.0, 3.0, 4.0])


def test_a_free_runner_takes_the_oldest_full_queue_first() -> None:
    queues = [deque([1, 3]), deque([0, 2]), deque([4])]
    policy = Policy(batch=2, timeout_ms=100, buckets=3)
    assert take_batch(queues, ARRIVALS, 5.0, policy) == [0, 2]  # its oldest came first
    assert take_batch(queues, ARRIVALS, 5.0, policy) == [1, 3]
    assert take_batch(queues, ARRIVALS, 5.0, policy) is None  # 4 has not waited 100 ms
    assert take_batch(queues, ARRIVALS, 104.0, policy) == [4]
    assert take_batch(queues, ARRIVALS, 1e9, policy) is None  # nothing waits


def test_a_timed_out_queue_goes_whole_up_to_a_batch() -> None:
    queues = [deque([0, 1, 2]), deque([3])]
    assert take_batch(queues, ARRIVALS, 50.0, Policy(4, 50, 2)) == [0, 1, 2]


def test_a_timed_out_queue_goes_before_a_younger_full_one() -> None:
    queues = [deque([2, 3, 4]), deque([0])]
    assert take_batch(queues, ARRIVALS, 100.0, Policy(3, 100, 2)) == [0]


def test_a_call_follows_its_longest_utterance() -> None:
    short, long = np.full(1024, 200), np.full(1024, 500)
    mixed = np.concatenate([np.full(1023, 200), [500]])
    assert call_ms_alone(short) < call_ms_alone(mixed) <= call_ms_alone(long)
    # A quarter of the rows cost nearly as much: the decoder's steps are the cost.
    assert call_ms_alone(long[:256]) > 0.6 * call_ms_alone(long)


def test_the_calibration_makes_the_models_offline_the_measured_rate() -> None:
    lengths = real_size_lengths()
    factor = contention(lengths)
    assert 1.0 < factor < 2.0  # two runners on one GPU: each slower, together faster
    batches = offline_batches(lengths, 1024, 200 * 1024)
    seconds = factor * sum(call_ms_alone(b) for b in batches) / 1e3
    assert 2 * 200 * 1024 / seconds == pytest.approx(RAW_OFFLINE)


def test_more_runners_are_calibrated_to_their_own_rate() -> None:
    """Four runners at their measured raw rate: each call slower beside three others, the model's
    Offline that rate, and a Server run's batches taken by all four."""
    lengths = real_size_lengths()
    factor = contention(lengths, runners=4, raw=18_782.0)
    assert factor > contention(lengths)
    batches = offline_batches(lengths, 1024, 200 * 1024)
    seconds = factor * sum(call_ms_alone(b) for b in batches) / 1e3
    assert 4 * 200 * 1024 / seconds == pytest.approx(18_782.0)
    policy = Policy(1024, configs.SERVER_GPU_TIMEOUT_US / 1e3, configs.SERVER_BUCKETS_PER_GPU)
    four = server_run(lengths, policy, 0.5 * 18_782.0, 4.0, factor, runners=4)
    two = server_run(lengths, policy, 0.5 * 18_782.0, 4.0, factor, runners=2)
    assert four.p99_ms < two.p99_ms  # at the same factor, two runners fall behind


def test_the_old_settings_fail_where_the_configs_length_queues_serve() -> None:
    lengths = real_size_lengths()
    factor = contention(lengths)
    old = server_run(lengths, Policy(256, 50, 1), 0.5 * RAW_OFFLINE, 8.0, factor)
    assert not old.valid and old.completed < 0.3 * RAW_OFFLINE  # the device run: ~21%
    ours = Policy(1024, configs.SERVER_GPU_TIMEOUT_US / 1e3, configs.SERVER_BUCKETS_PER_GPU)
    served = server_run(lengths, ours, 0.75 * RAW_OFFLINE, 8.0, factor)
    assert served.valid and served.mean_batch > 512


def test_policies_are_read_as_batch_timeout_and_queues() -> None:
    assert parse_policy("1024:550:8") == Policy(1024, 550.0, 8)
    for bad in ("1024:550", "a:1:1", "0:10:1", "8:10:0"):
        with pytest.raises(ArgumentTypeError):
            parse_policy(bad)


def test_the_model_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--seconds", "2", "--policy", "1024:550:8", "--runners", "4", "--raw", "18782"]
    assert server_model.main(argv) == 0
    out = capsys.readouterr().out
    assert "| batch 1,024, 550 ms, 8 length queues |" in out
    assert "4 runners at 18,782 samples/s raw" in out and "calibrated" in out
