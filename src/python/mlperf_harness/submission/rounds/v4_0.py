"""MLPerf Inference v4.0, from the single-file checker at the `v4.0` tag
(tools/submission/submission_checker.py, `MODEL_CONFIG["v4.0"]` and its check functions) and the
compliance tests under compliance/nvidia/ there. RNN-T's last round.

What differs from later rounds: the layout before v6.0 with mlperf.conf among each result's
measurement files and the code looked for as code/<model>/<implementation>/; TEST05 (the
performance run again under other LoadGen seeds) for every model with TEST01; ResNet-50 and BERT
with a "datacenter" entry (Server, Offline); BERT's Server bound 130 ms; the accuracy line of
ResNet-50 must start with `accuracy=`; Server's result is the scheduled rate. The round's checker
has no dataset-size table: an accuracy run's coverage is not checked (dataset_size None)."""

from __future__ import annotations

from types import MappingProxyType

from mlperf_harness.submission.rounds.common import (
    BOTH,
    DATACENTER,
    DATACENTER_QUERIES,
    EDGE,
    EDGE_QUERIES,
    IMAGE_QUERIES,
    LAYOUT_V4_0,
    MIN_DURATION_MS,
    MS,
    OFF,
    SERVER_QUERIES,
    SRV,
    SS,
    TEST01_ACCURACY_LOG_RNG_SEED,
    TEST04_SETTINGS,
    V4_0_CHECKER,
    V4_0_METRIC_KEYS,
    V4_0_PATTERNS,
    rules_by_model,
)
from mlperf_harness.submission.rounds.facts import (
    SINGLE_SCRIPT,
    AuditTest,
    ModelRules,
    Round,
    Source,
)

NAME = "v4.0"
_ENTRY = f'MODEL_CONFIG["{NAME}"]'


def _read(where: str, path: str = SINGLE_SCRIPT) -> Source:
    return Source(NAME, path, where)


_IMAGE_SCENARIOS = MappingProxyType(
    {DATACENTER: (SRV, OFF), EDGE: (SS, MS, OFF), BOTH: (SS, OFF, MS, SRV)}
)
_SERVER_SCENARIOS = MappingProxyType(
    {DATACENTER: (SRV, OFF), EDGE: (SS, OFF), BOTH: (SS, OFF, SRV)}
)
_T01_T05 = (AuditTest.TEST01, AuditTest.TEST05)

ROUND = Round(
    name=NAME,
    listed_models=(
        "resnet",
        "retinanet",
        "rnnt",
        "bert-99",
        "bert-99.9",
        "dlrm-v2-99",
        "dlrm-v2-99.9",
        "3d-unet-99",
        "3d-unet-99.9",
        "gptj-99",
        "gptj-99.9",
        "llama2-70b-99",
        "llama2-70b-99.9",
        "stable-diffusion-xl",
    ),
    models=rules_by_model(
        ModelRules(
            "resnet50",
            (("acc", 76.46 * 0.99),),
            dataset_size=None,
            performance_sample_count=1024,
            scenarios=_IMAGE_SCENARIOS,
            audits=(AuditTest.TEST01, AuditTest.TEST04, AuditTest.TEST05),
            accuracy_log_sampling_target=4096,
            server_latency_ns=15_000_000,
            min_queries=IMAGE_QUERIES,
            offline_min_samples_per_query=24_576,
            checker_model="resnet",
        ),
        ModelRules(
            "retinanet",
            (("mAP", 37.55 * 0.99),),
            dataset_size=None,
            performance_sample_count=64,
            scenarios=_IMAGE_SCENARIOS,
            audits=_T01_T05,
            accuracy_log_sampling_target=256,
            server_latency_ns=100_000_000,
            min_queries=IMAGE_QUERIES,
            offline_min_samples_per_query=24_576,
        ),
        ModelRules(
            "rnnt",
            (("WER", (100 - 7.452) * 0.99),),  # the metric is accuracy = 100 - WER
            dataset_size=None,
            performance_sample_count=2513,
            scenarios=_SERVER_SCENARIOS,
            audits=_T01_T05,
            accuracy_log_sampling_target=4096,
            server_latency_ns=1_000_000_000,
            min_queries=SERVER_QUERIES,
            offline_min_samples_per_query=2513,
        ),
        ModelRules(
            "bert-99",
            (("F1", 90.874 * 0.99),),
            dataset_size=None,
            performance_sample_count=10_833,
            scenarios=_SERVER_SCENARIOS,
            audits=_T01_T05,
            accuracy_log_sampling_target=4096,
            server_latency_ns=130_000_000,
            min_queries=SERVER_QUERIES,
            offline_min_samples_per_query=10_833,
        ),
        ModelRules(
            "bert-99.9",
            (("F1", 90.874 * 0.999),),
            dataset_size=None,
            performance_sample_count=10_833,
            scenarios=MappingProxyType({DATACENTER: (SRV, OFF), BOTH: (OFF, SRV)}),
            audits=_T01_T05,
            accuracy_log_sampling_target=4096,
            server_latency_ns=130_000_000,
            min_queries=SERVER_QUERIES,
            offline_min_samples_per_query=10_833,
        ),
        *(
            ModelRules(
                name,
                (("AUC", 80.31 * fraction),),
                dataset_size=None,
                performance_sample_count=204_800,
                scenarios=MappingProxyType({DATACENTER: (SRV, OFF), BOTH: (OFF, SRV)}),
                audits=_T01_T05,
                accuracy_log_sampling_target=4096,
                server_latency_ns=60_000_000,
                min_queries=DATACENTER_QUERIES,
                offline_min_samples_per_query=24_576,
            )
            for name, fraction in (("dlrm-v2-99", 0.99), ("dlrm-v2-99.9", 0.999))
        ),
        *(
            ModelRules(
                name,
                (("DICE", 0.86170 * fraction),),
                dataset_size=None,
                performance_sample_count=43,
                scenarios=MappingProxyType({DATACENTER: (OFF,), EDGE: (SS, OFF), BOTH: (SS, OFF)}),
                audits=_T01_T05,
                accuracy_log_sampling_target=64,
                min_queries=EDGE_QUERIES,
                offline_min_samples_per_query=43,
            )
            for name, fraction in (("3d-unet-99", 0.99), ("3d-unet-99.9", 0.999))
        ),
        *(
            ModelRules(
                name,
                (
                    ("ROUGE1", 42.9865 * fraction),
                    ("ROUGE2", 20.1235 * fraction),
                    ("ROUGEL", 29.9881 * fraction),
                    ("GEN_LEN", 4016878 * 0.9),
                ),
                dataset_size=None,
                performance_sample_count=13_368,
                scenarios=_SERVER_SCENARIOS,
                audits=(),  # check_compliance_dir removes TEST01, TEST04 and TEST05 for GPT-J
                accuracy_log_sampling_target=None,
                server_latency_ns=20_000_000_000,
                min_queries=SERVER_QUERIES,
                offline_min_samples_per_query=13_368,
            )
            for name, fraction in (("gptj-99", 0.99), ("gptj-99.9", 0.999))
        ),
    ),
    seeds=MappingProxyType(
        {
            "qsl_rng_seed": 13281865557512327830,
            "sample_index_rng_seed": 198141574272810017,
            "schedule_rng_seed": 7575108116881280410,
        }
    ),
    test05_seeds=MappingProxyType(
        {
            "qsl_rng_seed": 2376919268182438552,
            "sample_index_rng_seed": 11176391829184272374,
            "schedule_rng_seed": 3911940905271271337,
        }
    ),
    min_duration_ms=MIN_DURATION_MS,
    accuracy_patterns=MappingProxyType(
        {
            k: V4_0_PATTERNS[k]
            for k in ("acc", "mAP", "WER", "F1", "AUC", "DICE", "ROUGE1", "ROUGE2", "ROUGEL")
        }
        | {"GEN_LEN": V4_0_PATTERNS["GEN_LEN"]}
    ),
    metric_keys=V4_0_METRIC_KEYS,
    test01_accuracy_log_rng_seed=TEST01_ACCURACY_LOG_RNG_SEED,
    test04_settings=TEST04_SETTINGS,
    layout=LAYOUT_V4_0,
    checker=V4_0_CHECKER,
    sources=MappingProxyType(
        {
            "models": _read(f'{_ENTRY}["models"], ["model_mapping"]'),
            "scenarios": _read(f'{_ENTRY}["required-scenarios-*"]'),
            "audits": _read("check_compliance_dir (its test_list)"),
            "accuracy": _read(f'{_ENTRY}["accuracy-target"]'),
            "accuracy_patterns": _read("ACC_PATTERN"),
            "performance_sample_count": _read(f'{_ENTRY}["performance-sample-count"]'),
            "dataset_size": _read(f"{_ENTRY} (no dataset-size entry: not checked)"),
            "min_duration_ms": _read("TEST_DURATION_MS"),
            "min_queries": _read(f'{_ENTRY}["min-queries"]'),
            "offline_min_samples_per_query": _read("OFFLINE_MIN_SPQ_SINCE_V4"),
            "server_latency_ns": _read(f'{_ENTRY}["latency-constraint"]'),
            "seeds": _read(f'{_ENTRY}["seeds"]'),
            "test05_seeds": _read(
                f'{_ENTRY}["test05_seeds"], with compliance/nvidia/TEST05/audit.config'
            ),
            "test01": _read(
                "(and TEST01/<model>/audit.config)",
                "compliance/nvidia/TEST01/resnet50/audit.config",
            ),
            "test04": _read("", "compliance/nvidia/TEST04/audit.config"),
            "layout": _read("check_results_dir, check_measurement_dir, REQUIRED_MEASURE_FILES"),
            "metric_keys": _read(f'RESULT_FIELD_NEW["{NAME}"]'),
            "checker": _read("--version"),
        }
    ),
    notes=(
        "TEST05's audit.config sets `*.*.test05 = 1`; LoadGen 6.0.17 reads that key only from its"
        " built-in mlperf.conf, so a TEST05 run sets TestSettings.test05 and the round's three"
        " test05 seeds itself (LoadGen then logs 'Test05 flag detected').",
        "The checker's performance check reads TEST05's seeds from test05_seeds wherever the log"
        " path holds 'TEST05'.",
    ),
)
