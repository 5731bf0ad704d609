from mlperf_harness.backends import registry
from mlperf_harness.backends.names import BACKEND_NAMES
from mlperf_harness.config.fields import field_info


def test_every_named_backend_has_a_factory_and_every_factory_a_name() -> None:
    assert sorted(registry._FACTORIES) == sorted(BACKEND_NAMES)


def test_the_settings_table_names_every_backend() -> None:
    assert field_info("backend").help == f"inference backend: {', '.join(BACKEND_NAMES)}"
