"""A runner that sends each batch to one Triton server and waits for its answer: what a Triton run
whose rates are measured at its start times (cli/run_harness.measure_at_start), one per server,
side by side, as the run's SUT spreads its batches over them."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from tritonclient.utils import InferenceServerException

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError
from mlperf_harness.triton import wire
from mlperf_harness.triton.addresses import ServerAddress
from mlperf_harness.triton.served_model import OUTPUT, ServedModel


class ServerProbe(Runner):
    name = "triton"

    def __init__(self, address: ServerAddress, served: ServedModel, timeout_s: float) -> None:
        self._address = address
        self._served = served
        self._timeout_s = timeout_s

    def activate(self) -> None:
        return  # each call opens a stream of its own (wire.call)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        inputs = [wire.samples_input(batch)]
        try:
            result = wire.call(
                self._address, self._served.model_name, inputs, OUTPUT, self._timeout_s
            )
        except InferenceServerException as error:
            raise HarnessError(
                f"timing the engine at start: server {self._address} failed a batch of"
                f" {len(batch)}: {wire.describe_error(error)}"
            ) from None
        return wire.rows(result, self._served, OUTPUT)

    def deactivate(self) -> None:
        return
