"""The model that Triton's Python backend runs in each instance process (`--triton_runtime
python_backend`, the default): our runners inside the stub itself, with no process between.

Under PyTriton every request went from the stub to PyTriton's serving process and back (about 4-5
ms a query on an H200 host, docs/triton.md); here the stub prepares the benchmark as the serving
process did (the same flags, so the same cached engines and data) and activates the runners of its
device: instance i of the model serves the i-th device's runners (on GPU hosts, one GPU's streams;
on a CPU host, every worker), each on a thread of its own, as the direct harness runs them in one
process. Earlier each runner was an instance process of its own, with its own CUDA context, and a
GPU switched between the contexts of its instances instead of overlapping their streams (two
instances per GPU did better than four, docs/triton.md).

The model is decoupled (Triton's `model_transaction_policy`): `execute` only queues the batch
Triton's dynamic batcher hands it and returns; the first free runner thread runs it with
serve.infer_function, the logic the PyTriton runtime runs, and answers each request through its
response sender. Clients reach a decoupled model over gRPC streams only (wire.py). A HOLD (staged
samples) waits until no batch runs (batch_gate.py) and is shared with the other instance processes
through the server's workspace (instance_holds.py).

The model repository's model.py (model_repository.py) only imports TritonPythonModel from here.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import re
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.backends.base import Runner
from mlperf_harness.triton.batch_gate import BatchGate
from mlperf_harness.triton.instance_holds import InstanceHolds
from mlperf_harness.triton.served_model import HOLD, ServedModel

SPEC_PARAMETER = "mlperf_harness_spec"  # config.pbtxt parameter: the path of the spec file
INSTANCE_GROUP = "device"  # instance names: "device" (one instance) or "device_<i>"
ERROR_FILE = "instance-{index}.error"  # in the workspace: why an instance failed to start


def instance_index(name: str) -> int:
    """Triton names the instances of a group of one `<group>`, of several `<group>_<i>`."""
    if name == INSTANCE_GROUP:
        return 0
    found = re.fullmatch(rf"{INSTANCE_GROUP}_(\d+)", name)
    if found is None:
        raise ValueError(f"unexpected model instance name {name!r}")
    return int(found.group(1))


class _Request:
    """A Python-backend request as serve.infer_function reads a PyTriton one."""

    def __init__(self, request: Any, utils: Any) -> None:
        self._request = request
        self._utils = utils
        self.requested_output_names = list(request.requested_output_names())

    def __contains__(self, name: str) -> bool:
        return self._utils.get_input_tensor_by_name(self._request, name) is not None

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        tensor = self._utils.get_input_tensor_by_name(self._request, name)
        if tensor is None:
            raise KeyError(name)
        array: npt.NDArray[Any] = tensor.as_numpy()
        return array


def device_runners(
    runners: Sequence[Runner], devices: Sequence[int], instance: int
) -> list[Runner]:
    """The runners instance `instance` serves: those of the instance-th device (in device order),
    each as often as the backend lists it (a CPU backend lists one runner once per worker)."""
    order = sorted(set(devices))
    if instance >= len(order):
        raise RuntimeError(f"model instance {instance} has no device ({len(order)} with runners)")
    return [
        runner for runner, device in zip(runners, devices, strict=True) if device == order[instance]
    ]


class TritonPythonModel:
    """One model instance: Triton calls initialize once, execute for every batch of requests,
    finalize when the server stops."""

    def initialize(self, args: dict[str, str]) -> None:
        # Only Triton's stub provides this module; imported here so that the rest of the harness
        # (and its tests) can import this one.
        self._utils = importlib.import_module("triton_python_backend_utils")
        config = json.loads(args["model_config"])
        spec_path = Path(config["parameters"][SPEC_PARAMETER]["string_value"])
        spec = json.loads(spec_path.read_text())
        self._index = instance_index(args["model_instance_name"])
        self._work: queue.SimpleQueue[list[Any] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        try:
            self._start(spec)
        except BaseException as error:
            # The server process reports this line: Triton's log has it too, under its traceback.
            message = str(error) or type(error).__name__
            error_file = Path(spec["workspace"]) / ERROR_FILE.format(index=self._index)
            write_text_atomic(error_file, message + "\n")
            traceback.print_exc()
            raise

    def _start(self, spec: dict[str, Any]) -> None:
        # Imported here: serve imports the whole harness, which the stub needs only once it starts.
        from mlperf_harness.cli.options import options_from_args
        from mlperf_harness.cli.run_harness import unique_runners
        from mlperf_harness.triton import serve
        from mlperf_harness.triton.held_samples import HeldSamples

        os.chdir(spec["cwd"])
        argv = list(spec["argv"])
        benchmark, args = serve.parse_served(argv)
        served = serve.prepare_served(benchmark, options_from_args(args, argv))
        runners = device_runners(served.runners, served.devices, self._index)
        self._active = unique_runners(runners)
        warm = served.prepared.store.warmup_batch(served.batch_size)
        for runner in self._active:
            runner.__enter__()
            runner.infer(warm)  # allocation and kernel choice before the first request
        self._gate = BatchGate()
        self._holds = InstanceHolds(
            HeldSamples(served.prepared.store, self._active),
            Path(spec["workspace"]) / "holds",
            self._index,
            int(spec["instances"]),
            self._gate.hold,
        )
        self._holds.start()
        # The serve process's identity record, so that every instance answers the same one.
        identity = ServedModel.from_json(spec["identity"], "this server")
        for number, runner in enumerate(runners):
            infer = serve.infer_function(
                runner,
                served.postprocess,
                spec["identity"].encode(),
                identity.sample_shape,
                identity.varying_shapes,
                self._holds,
            )
            thread = threading.Thread(
                target=self._serve, args=(infer,), name=f"runner-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def execute(self, requests: list[Any]) -> None:
        """Decoupled: the batch waits for a runner thread, which answers it."""
        self._work.put(requests)

    def _serve(self, infer: Callable[[list[Any]], list[dict[str, npt.NDArray[Any]]]]) -> None:
        utils = self._utils
        final = utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        while (requests := self._work.get()) is not None:
            wrapped = [_Request(request, utils) for request in requests]
            gate = (
                self._gate.hold if any(HOLD in request for request in wrapped) else self._gate.batch
            )
            try:
                with gate():
                    replies = infer(wrapped)
                responses = [
                    utils.InferenceResponse(
                        output_tensors=[
                            utils.Tensor(name, np.ascontiguousarray(array))
                            for name, array in reply.items()
                        ]
                    )
                    for reply in replies
                ]
            except Exception as error:
                failure = utils.TritonError(f"{type(error).__name__}: {error}")
                responses = [
                    utils.InferenceResponse(output_tensors=[], error=failure) for _ in requests
                ]
            for request, response in zip(requests, responses, strict=True):
                try:
                    request.get_response_sender().send(response, flags=final)
                except Exception:  # that client is gone (its stream cancelled): the others wait
                    traceback.print_exc()

    def finalize(self) -> None:
        """Triton has answered every request it held (its exit timeout): the threads end."""
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join()
        holds = getattr(self, "_holds", None)
        if holds is not None:
            holds.stop()
        for runner in getattr(self, "_active", []):
            runner.deactivate()
