from mlperf_harness.backends import registry
from mlperf_harness.backends.names import BACKEND_NAMES
from mlperf_harness.config.fields import value_problem


def test_every_named_backend_has_a_factory_and_every_factory_a_name() -> None:
    assert sorted(registry._FACTORIES) == sorted(BACKEND_NAMES)


def test_a_config_naming_an_unknown_backend_is_refused_with_the_names() -> None:
    problem = value_problem("backend", "tensorflow")
    assert problem == f"backend must be one of {', '.join(BACKEND_NAMES)}, got 'tensorflow'"
