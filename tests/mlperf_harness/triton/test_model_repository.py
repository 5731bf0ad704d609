"""The Python-backend runtime's model repository, without a server (the Triton tests load it in a
real tritonserver): the config's tensors, batching, instances and decoupled policy, and the
instance names and devices that pick each instance's runners."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import pytest

from mlperf_harness.backends.base import Runner
from mlperf_harness.triton.backend_model import device_runners, instance_index
from mlperf_harness.triton.model_repository import (
    MODEL_FILE,
    SPEC_FILE,
    model_config,
    triton_type,
    write_repository,
)
from mlperf_harness.triton.serve import TensorSpec


def test_instance_names_give_each_instance_its_device() -> None:
    assert instance_index("device") == 0  # a group of one
    assert [instance_index(f"device_{i}") for i in (0, 3, 12)] == [0, 3, 12]
    with pytest.raises(ValueError, match="unexpected model instance name 'resnet50_0'"):
        instance_index("resnet50_0")


def test_each_instance_serves_the_runners_of_one_device() -> None:
    # Two GPUs, two streams each, in the order spread_over_devices makes them.
    runners = cast(list[Runner], ["gpu0-a", "gpu1-a", "gpu0-b", "gpu1-b"])
    devices = [0, 1, 0, 1]
    assert device_runners(runners, devices, 0) == [runners[0], runners[2]]
    assert device_runners(runners, devices, 1) == [runners[1], runners[3]]
    # A CPU backend lists its one runner once per worker: each worker a thread of one instance.
    cpu = cast(list[Runner], ["cpu"] * 3)
    assert device_runners(cpu, [0, 0, 0], 0) == cpu
    with pytest.raises(RuntimeError, match="model instance 2 has no device"):
        device_runners(runners, devices, 2)


def test_triton_types() -> None:
    assert triton_type(np.dtype(np.float16)) == "TYPE_FP16"
    assert triton_type(np.dtype(object)) == "TYPE_STRING"
    with pytest.raises(ValueError, match="no tensor type for complex64"):
        triton_type(np.dtype(np.complex64))


def test_the_config_declares_tensors_batching_instances_and_the_spec(tmp_path: Path) -> None:
    spec_path = tmp_path / 'a "quoted" dir' / SPEC_FILE
    text = model_config(
        "resnet50",
        [TensorSpec("samples", np.dtype(np.float32), (3, 224, 224), optional=True)],
        [
            TensorSpec("identity", np.dtype(object), (1,)),
            TensorSpec("hold", np.dtype(np.int64), (-1,)),
        ],
        256,
        4000,
        8,
        spec_path,
    )
    assert 'name: "resnet50"\nbackend: "python"\nmax_batch_size: 256\n' in text
    assert (
        '  {\n    name: "samples"\n    data_type: TYPE_FP32\n    dims: [ 3, 224, 224 ]\n'
        "    optional: true\n  }" in text
    )
    assert '    name: "identity"\n    data_type: TYPE_STRING\n    dims: [ 1 ]\n  },\n' in text
    assert "dims: [ -1 ]\n  }\n]" in text
    assert 'name: "device"\n    count: 8\n    kind: KIND_CPU' in text
    assert "model_transaction_policy {\n  decoupled: true\n}" in text
    assert "preferred_batch_size: [ 256 ]\n  max_queue_delay_microseconds: 4000\n" in text
    assert 'string_value: "' + str(spec_path).replace('"', '\\"') + '"' in text


def test_the_repository_holds_the_config_the_model_and_the_spec(tmp_path: Path) -> None:
    repository = write_repository(tmp_path, "bert", 'name: "bert"\n', {"instances": 2})
    assert (repository / "bert" / "config.pbtxt").read_text() == 'name: "bert"\n'
    assert (repository / "bert" / "1" / "model.py").read_text() == MODEL_FILE
    assert (tmp_path / SPEC_FILE).read_text().split() == ["{", '"instances":', "2", "}"]
