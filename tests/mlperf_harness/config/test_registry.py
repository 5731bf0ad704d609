from __future__ import annotations

import pytest

from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.config.registry import (
    ANY_SYSTEM,
    DEFAULT_REGISTRY,
    BenchmarkConfig,
    ConfigKey,
    ConfigRegistry,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

H100 = "H100-SXM-80GBx1"
MODULE = __name__  # config classes' origins name their module


@pytest.fixture
def registry() -> ConfigRegistry:
    return ConfigRegistry()


def _register_resnet50_family(registry: ConfigRegistry) -> None:
    """benchmark base -> scenario classes -> one system class, as a benchmark module would."""

    class ResNet50(BenchmarkConfig):
        precision = "int8"
        backend = "onnxruntime"
        batch_size = 1
        min_duration_ms = 600_000

    @registry.register(benchmark="resnet50", scenario=Scenario.OFFLINE, system=ANY_SYSTEM)
    class ResNet50Offline(ResNet50):
        batch_size = 64
        offline_expected_qps = 80.0

    @registry.register(benchmark="resnet50", scenario=Scenario.SERVER)
    class ResNet50Server(ResNet50):
        batch_size = 8
        server_target_qps = 40
        server_batch_timeout_us = 2000

    @registry.register(benchmark="resnet50", scenario=Scenario.OFFLINE, system=H100)
    class ResNet50OfflineH100(ResNet50Offline):
        backend = "torch"
        batch_size = 2048
        offline_expected_qps = 88_000.0


def test_scenario_class_overrides_benchmark_base(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    resolved = registry.resolve("resnet50", Scenario.SERVER, "some-machine")
    assert resolved.settings == HarnessSettings(
        precision="int8",
        backend="onnxruntime",
        batch_size=8,
        min_duration_ms=600_000,
        server_target_qps=40.0,
        server_batch_timeout_us=2000,
    )
    assert resolved.key == ConfigKey("resnet50", Scenario.SERVER, ANY_SYSTEM)


def test_system_class_overrides_scenario_class(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    resolved = registry.resolve("resnet50", Scenario.OFFLINE, H100)
    assert resolved.key == ConfigKey("resnet50", Scenario.OFFLINE, H100)
    assert resolved.settings == HarnessSettings(
        precision="int8",
        backend="torch",
        batch_size=2048,
        min_duration_ms=600_000,
        offline_expected_qps=88_000.0,
    )
    base = f"{MODULE}._register_resnet50_family.<locals>."
    assert resolved.origin_of("batch_size") == base + "ResNet50OfflineH100"
    assert resolved.origin_of("precision") == base + "ResNet50"
    assert resolved.origin_of("server_target_qps") is None
    assert [origin.name for origin in resolved.origins] == list(resolved.settings.set_fields())


def test_other_systems_fall_back_to_the_any_system_config(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    resolved = registry.resolve("resnet50", Scenario.OFFLINE, "Intel-Xeon_2c")
    assert resolved.key.system == ANY_SYSTEM
    assert resolved.requested_system == "Intel-Xeon_2c"
    assert resolved.settings.batch_size == 64
    assert resolved.settings.backend == "onnxruntime"


def test_resolve_without_a_config_lists_what_is_registered(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    with pytest.raises(HarnessError) as raised:
        registry.resolve("resnet50", Scenario.MULTI_STREAM, H100)
    assert str(raised.value) == (
        f"no config for resnet50/MultiStream on {H100} or any system; registered for resnet50: "
        f"resnet50/Offline/any system, resnet50/Offline/{H100}, resnet50/Server/any system"
    )
    with pytest.raises(HarnessError, match=r"registered benchmarks: resnet50$"):
        registry.resolve("bert", Scenario.OFFLINE, H100)
    with pytest.raises(HarnessError, match=r"registered benchmarks: none$"):
        ConfigRegistry().resolve("bert", Scenario.OFFLINE, H100)


def test_a_system_config_without_any_system_config_serves_only_that_system(
    registry: ConfigRegistry,
) -> None:
    @registry.register("bert", Scenario.OFFLINE, system=H100)
    class BertOfflineH100(BenchmarkConfig):
        batch_size = 1024

    assert registry.resolve("bert", Scenario.OFFLINE, H100).settings.batch_size == 1024
    with pytest.raises(HarnessError, match="no config for bert/Offline on other"):
        registry.resolve("bert", Scenario.OFFLINE, "other")


def test_none_unsets_an_inherited_setting_and_private_names_are_not_settings(
    registry: ConfigRegistry,
) -> None:
    class Base(BenchmarkConfig):
        min_duration_ms: int | None = 1000  # may be unset by a subclass
        _note = "not a setting"

    @registry.register("harness_overhead", Scenario.SINGLE_STREAM)
    class SingleStream(Base):
        min_duration_ms = None
        _tuned_on = ("anything goes here",)

    resolved = registry.resolve("harness_overhead", Scenario.SINGLE_STREAM, H100)
    assert resolved.settings == HarnessSettings()
    assert resolved.origins == ()


def test_decorator_returns_the_class(registry: ConfigRegistry) -> None:
    class Offline(BenchmarkConfig):
        batch_size = 4

    assert registry.register("x", Scenario.OFFLINE)(Offline) is Offline


def _registration_error(registry: ConfigRegistry, cls: type[BenchmarkConfig]) -> str:
    with pytest.raises(HarnessError) as raised:
        registry.register("resnet50", Scenario.OFFLINE)(cls)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_unknown_setting_suggests_the_closest_name(registry: ConfigRegistry) -> None:
    class Typo(BenchmarkConfig):
        batchsize = 32

    assert _registration_error(registry, Typo) == (
        "Typo (resnet50/Offline/any system): unknown setting 'batchsize'"
        " (did you mean 'batch_size'?)"
    )


def test_unknown_setting_without_a_close_name_points_to_the_table(
    registry: ConfigRegistry,
) -> None:
    class Unrelated(BenchmarkConfig):
        colour = "blue"

    message = _registration_error(registry, Unrelated)
    assert message.startswith("Unrelated (resnet50/Offline/any system): unknown setting 'colour'")
    assert "describe_fields()" in message


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("batch_size", "32", "batch_size must be int, got str '32'"),
        ("batch_size", True, "batch_size must be int, got bool True"),
        ("offline_expected_qps", "fast", "offline_expected_qps must be float, got str 'fast'"),
        ("precision", "int4", "precision must be one of fp32, fp16, bf16, int8, fp8, got 'int4'"),
        ("worker_count", 0, "worker_count must be positive, got 0"),
    ],
)
def test_wrong_type_or_value_names_the_class(
    registry: ConfigRegistry, name: str, value: object, problem: str
) -> None:
    cls = type("BadValue", (BenchmarkConfig,), {name: value})
    assert (
        _registration_error(registry, cls) == f"BadValue (resnet50/Offline/any system): {problem}"
    )


def test_int_for_a_float_setting_is_fine(registry: ConfigRegistry) -> None:
    @registry.register("resnet50", Scenario.OFFLINE)
    class IntQps(BenchmarkConfig):
        offline_expected_qps = 100

    assert (
        registry.resolve("resnet50", Scenario.OFFLINE, H100).settings.offline_expected_qps == 100.0
    )


def test_setting_of_another_scenario_is_refused(registry: ConfigRegistry) -> None:
    class ServerOnly(BenchmarkConfig):
        server_target_qps = 100.0

    assert _registration_error(registry, ServerOnly) == (
        "ServerOnly (resnet50/Offline/any system): server_target_qps applies to Server only,"
        " not Offline"
    )


def test_inherited_problem_names_the_class_that_set_it(registry: ConfigRegistry) -> None:
    class Base(BenchmarkConfig):
        server_batch_timeout_us = 100

    class Offline(Base):
        batch_size = 8

    assert _registration_error(registry, Offline) == (
        "Offline (resnet50/Offline/any system), inherited from Base:"
        " server_batch_timeout_us applies to Server only, not Offline"
    )


def test_duplicate_registration_is_refused(registry: ConfigRegistry) -> None:
    @registry.register("resnet50", Scenario.OFFLINE)
    class First(BenchmarkConfig):
        batch_size = 8

    class Second(BenchmarkConfig):
        batch_size = 16

    assert _registration_error(registry, Second) == (
        "Second: resnet50/Offline/any system is already registered by First"
    )
    # The first registration stands.
    assert registry.resolve("resnet50", Scenario.OFFLINE, H100).settings.batch_size == 8


def test_a_class_that_is_not_a_config_is_refused(registry: ConfigRegistry) -> None:
    class NotAConfig:
        batch_size = 8

    with pytest.raises(
        HarnessError, match=r"^NotAConfig: a config class must subclass BenchmarkConfig$"
    ):
        registry.register("resnet50", Scenario.OFFLINE)(NotAConfig)  # type: ignore[type-var]


def test_registries_are_independent(registry: ConfigRegistry) -> None:
    default_keys = DEFAULT_REGISTRY.registered_keys()
    _register_resnet50_family(registry)
    assert len(registry.registered_keys()) == 3
    assert ConfigRegistry().registered_keys() == ()
    assert DEFAULT_REGISTRY.registered_keys() == default_keys


def test_overrides_inherit_the_any_system_config_field_by_field(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    registry.register_overrides(
        "resnet50", Scenario.SERVER, "MyBox", HarnessSettings(batch_size=16), "configs/MyBox.json"
    )
    resolved = registry.resolve("resnet50", Scenario.SERVER, "MyBox")
    assert resolved.key == ConfigKey("resnet50", Scenario.SERVER, "MyBox")
    assert resolved.settings.batch_size == 16
    assert resolved.settings.server_target_qps == 40.0  # inherited
    assert resolved.origin_of("batch_size") == "configs/MyBox.json"
    assert str(resolved.origin_of("server_target_qps")).endswith(".ResNet50Server")


def test_overrides_are_checked(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    with pytest.raises(
        HarnessError, match=r"^f\.json: resnet50\.Offline: server_target_qps applies"
    ):
        registry.register_overrides(
            "resnet50", Scenario.OFFLINE, "MyBox", HarnessSettings(server_target_qps=1.0), "f.json"
        )
    with pytest.raises(
        HarnessError, match=r"^f\.json: no config for resnet50/SingleStream to inherit"
    ):
        registry.register_overrides(
            "resnet50", Scenario.SINGLE_STREAM, "MyBox", HarnessSettings(batch_size=1), "f.json"
        )
    with pytest.raises(HarnessError, match="need a system name"):
        registry.register_overrides(
            "resnet50", Scenario.OFFLINE, ANY_SYSTEM, HarnessSettings(batch_size=1), "f.json"
        )
    with pytest.raises(
        HarnessError,
        match=rf"^f\.json: resnet50/Offline/{H100} is already registered by ResNet50OfflineH100$",
    ):
        registry.register_overrides(
            "resnet50", Scenario.OFFLINE, H100, HarnessSettings(batch_size=1), "f.json"
        )


def test_with_overrides_and_describe_for_show_config(registry: ConfigRegistry) -> None:
    _register_resnet50_family(registry)
    resolved = registry.resolve("resnet50", Scenario.OFFLINE, "Intel-Xeon_2c")
    flags = resolved.with_overrides(HarnessSettings(batch_size=2), "command line")
    assert flags.settings.batch_size == 2
    assert flags.settings.offline_expected_qps == 80.0
    assert flags.origin_of("batch_size") == "command line"
    printout = flags.describe().splitlines()
    assert printout[0] == "resnet50/Offline on Intel-Xeon_2c: config for any system"
    assert "  batch_size = 2  # command line" in printout
    assert (
        f"  precision = 'int8'  # {MODULE}._register_resnet50_family.<locals>.ResNet50" in printout
    )
    assert len(printout) == 1 + len(flags.settings.set_fields())
