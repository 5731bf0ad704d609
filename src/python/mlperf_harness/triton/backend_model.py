"""The model that Triton's Python backend runs in each instance process (`--triton_runtime
python_backend`, the default): our runner inside the stub itself, with no process between.

Under PyTriton every request went from the stub to PyTriton's serving process and back (about 4-5
ms a query on an H200 host, docs/triton.md); here the stub prepares the benchmark as the serving
process did (the same flags, so the same cached engines and data), activates the one runner of its
instance (instance i of the model takes runner i of the list the backend makes: on GPU hosts one
per GPU and stream) and answers each batch of requests with serve.infer_function, the logic the
PyTriton runtime runs. A HOLD (staged samples) is shared with the other instance processes through
the server's workspace (instance_holds.py).

The model repository's model.py (model_repository.py) only imports TritonPythonModel from here.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.triton.instance_holds import InstanceHolds
from mlperf_harness.triton.served_model import ServedModel

SPEC_PARAMETER = "mlperf_harness_spec"  # config.pbtxt parameter: the path of the spec file
INSTANCE_GROUP = "runner"  # instance names: "runner" (one instance) or "runner_<i>"
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
        from mlperf_harness.triton import serve
        from mlperf_harness.triton.held_samples import HeldSamples

        os.chdir(spec["cwd"])
        argv = list(spec["argv"])
        args = serve.serve_parser().parse_args(argv)
        benchmark = serve.load_benchmark_module(args.benchmark_module)
        served = serve.prepare_served(benchmark, options_from_args(args, argv))
        if self._index >= len(served.runners):
            raise RuntimeError(
                f"model instance {self._index} has no runner ({len(served.runners)} prepared)"
            )
        runner = served.runners[self._index]
        self._runner = runner.__enter__()
        warm = served.prepared.store.warmup_batch(served.batch_size)
        runner.infer(warm)  # allocation and kernel choice before the first request
        self._lock = threading.Lock()
        held = HeldSamples(served.prepared.store, [runner])
        self._holds = InstanceHolds(
            held, Path(spec["workspace"]) / "holds", self._index, int(spec["instances"]), self._lock
        )
        self._holds.start()
        # The serve process's identity record, so that every instance answers the same one.
        identity = ServedModel.from_json(spec["identity"], "this server")
        self._infer = serve.infer_function(
            runner,
            served.postprocess,
            spec["identity"].encode(),
            identity.sample_shape,
            identity.varying_shapes,
            self._holds,
        )

    def execute(self, requests: list[Any]) -> list[Any]:
        utils = self._utils
        with self._lock:
            try:
                replies = self._infer([_Request(request, utils) for request in requests])
            except Exception as error:
                failure = utils.TritonError(f"{type(error).__name__}: {error}")
                return [utils.InferenceResponse(output_tensors=[], error=failure) for _ in requests]
        return [
            utils.InferenceResponse(
                output_tensors=[
                    utils.Tensor(name, np.ascontiguousarray(array)) for name, array in reply.items()
                ]
            )
            for reply in replies
        ]

    def finalize(self) -> None:
        holds = getattr(self, "_holds", None)
        if holds is not None:
            holds.stop()
        runner = getattr(self, "_runner", None)
        if runner is not None:
            runner.deactivate()
