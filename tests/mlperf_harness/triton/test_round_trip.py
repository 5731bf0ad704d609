"""The round-trip probe's bad inputs (docs/triton.md measures servers with it): one line each."""

from __future__ import annotations

import pytest
from one_line_errors import one_error_line

from mlperf_harness.triton.local_server import free_port
from mlperf_harness.triton.round_trip import round_trip


def test_a_server_that_is_not_there_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    server = f"127.0.0.1:{free_port()}"
    assert round_trip(["--server", server, "--model", "resnet50"]) == 2
    line = one_error_line(capsys.readouterr().err, "round_trip")
    assert f"{server}: UNAVAILABLE" in line


@pytest.mark.parametrize("sizes", ["0", "1,x"])
def test_bad_batch_sizes_are_refused(sizes: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        round_trip(["--server", "127.0.0.1:8001", "--model", "m", "--batch_sizes", sizes])
    assert caught.value.code == 2
    assert "argument --batch_sizes" in capsys.readouterr().err
