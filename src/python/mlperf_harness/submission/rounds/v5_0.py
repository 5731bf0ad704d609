"""MLPerf Inference v5.0, from the current checker's `MODEL_CONFIG["v5.0"]` (constants.py) and its
checks; the compliance tests' audit.config files at the same commit. GPT-J's last round.

The layout before v6.0, as v5.1's. ResNet-50 still had a "datacenter" entry (Server, Offline).
The script at the v5.0 tag also looks for each result's code as code/<model>/<implementation>/,
as v4.0's did (the current checker only for code/): the table asks for both. GPT-J needs TEST06
here (the current checker's `models_TEST06`; the script at the v5.0 tag asked GPT-J for no audit).
GPT-J's ROUGE lines are read as the script at the v5.0 tag reads them (a digit right after "': "),
which the current checker reads too: a tree passes both."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from mlperf_harness.submission.rounds.common import (
    BOTH,
    CURRENT_METRIC_KEYS,
    CURRENT_PATTERNS,
    CURRENT_UNET3D,
    DATACENTER,
    DATACENTER_QUERIES,
    EDGE,
    EDGE_QUERIES,
    IMAGE_QUERIES,
    LAYOUT_V5,
    MIN_DURATION_MS,
    MS,
    OFF,
    SERVER_QUERIES,
    SRV,
    SS,
    TEST01_ACCURACY_LOG_RNG_SEED,
    TEST04_SETTINGS,
    V4_0_PATTERNS,
    current_checker,
    current_sources,
    rules_by_model,
)
from mlperf_harness.submission.rounds.facts import (
    PERFORMANCE_CHECK,
    SINGLE_SCRIPT,
    AuditTest,
    CheckerDefect,
    ModelRules,
    Round,
    Source,
    current,
)

NAME = "v5.0"

_IMAGE_SCENARIOS = MappingProxyType(
    {DATACENTER: (SRV, OFF), EDGE: (SS, MS, OFF), BOTH: (SS, OFF, MS, SRV)}
)
_EDGE_SS_OFF = MappingProxyType({EDGE: (SS, OFF), BOTH: (SS, OFF)})
# The current checker has no GPT-J entry in OFFLINE_MIN_SPQ_SINCE_V4 (its closed Offline check
# would raise a KeyError); the v5.0 tag's own script has one.
_GPTJ_OFFLINE = Source(NAME, SINGLE_SCRIPT, "OFFLINE_MIN_SPQ_SINCE_V4")
# The v5.0 tag's ROUGE patterns want the figure unquoted ('rouge1': 42.9); the current checker's
# also take evaluation.py's quoted figures ('rouge1': '42.9'). The stricter ones: a line both read.
_ROUGE = ("ROUGE1", "ROUGE2", "ROUGEL")
_GPTJ_PATTERNS = Source(NAME, SINGLE_SCRIPT, "ACC_PATTERN (ROUGE1, ROUGE2, ROUGEL)")

ROUND = Round(
    name=NAME,
    listed_models=(
        "resnet",
        "retinanet",
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
        "llama2-70b-interactive-99",
        "llama2-70b-interactive-99.9",
        "stable-diffusion-xl",
        "mixtral-8x7b",
        "llama3.1-405b",
        "rgat",
        "pointpainting",
    ),
    models=rules_by_model(
        ModelRules(
            "resnet50",
            (("acc", 76.46 * 0.99),),
            dataset_size=50_000,
            performance_sample_count=1024,
            scenarios=_IMAGE_SCENARIOS,
            audits=(AuditTest.TEST01, AuditTest.TEST04),
            accuracy_log_sampling_target=4096,
            server_latency_ns=15_000_000,
            min_queries=IMAGE_QUERIES,
            offline_min_samples_per_query=24_576,
            checker_model="resnet",
        ),
        ModelRules(
            "retinanet",
            (("mAP", 37.55 * 0.99),),
            dataset_size=24_781,
            performance_sample_count=64,
            scenarios=_IMAGE_SCENARIOS,
            audits=(AuditTest.TEST01,),
            accuracy_log_sampling_target=256,
            server_latency_ns=100_000_000,
            min_queries=IMAGE_QUERIES,
            offline_min_samples_per_query=24_576,
        ),
        *(
            ModelRules(
                name,
                (("F1", 90.874 * fraction),),
                dataset_size=10_833,
                performance_sample_count=10_833,
                scenarios=_EDGE_SS_OFF,
                audits=(AuditTest.TEST01,),
                accuracy_log_sampling_target=4096,
                min_queries=EDGE_QUERIES,
                offline_min_samples_per_query=10_833,
            )
            for name, fraction in (("bert-99", 0.99), ("bert-99.9", 0.999))
        ),
        *(
            ModelRules(
                name,
                (("AUC", 80.31 * fraction),),
                dataset_size=330_067,
                performance_sample_count=204_800,
                scenarios=MappingProxyType({DATACENTER: (SRV, OFF), BOTH: (OFF, SRV)}),
                audits=(AuditTest.TEST01,),
                accuracy_log_sampling_target=4096,
                server_latency_ns=60_000_000,
                min_queries=DATACENTER_QUERIES,
                offline_min_samples_per_query=24_576,
            )
            for name, fraction in (("dlrm-v2-99", 0.99), ("dlrm-v2-99.9", 0.999))
        ),
        *CURRENT_UNET3D,
        *(
            ModelRules(
                name,
                (
                    ("ROUGE1", 42.9865 * fraction),
                    ("ROUGE2", 20.1235 * fraction),
                    ("ROUGEL", 29.9881 * fraction),
                    ("GEN_LEN", 4016878 * 0.9),
                ),
                dataset_size=13_368,
                performance_sample_count=13_368,
                scenarios=MappingProxyType(
                    {DATACENTER: (SRV, OFF), EDGE: (SS, OFF), BOTH: (SS, OFF, SRV)}
                ),
                audits=(AuditTest.TEST06,),
                accuracy_log_sampling_target=None,
                server_latency_ns=20_000_000_000,
                min_queries=SERVER_QUERIES,
                offline_min_samples_per_query=13_368,
                sources=MappingProxyType(
                    {
                        "offline_min_samples_per_query": _GPTJ_OFFLINE,
                        "accuracy_patterns": _GPTJ_PATTERNS,
                    }
                ),
            )
            for name, fraction in (("gptj-99", 0.99), ("gptj-99.9", 0.999))
        ),
    ),
    seeds=MappingProxyType(
        {
            "qsl_rng_seed": 6023615788873153749,
            "sample_index_rng_seed": 15036839855038426416,
            "schedule_rng_seed": 9933818062894767841,
        }
    ),
    test05_seeds=None,
    min_duration_ms=MIN_DURATION_MS,
    accuracy_patterns=MappingProxyType(
        {
            **{k: CURRENT_PATTERNS[k] for k in ("acc", "mAP", "F1", "AUC", "DICE", "GEN_LEN")},
            **{k: V4_0_PATTERNS[k] for k in _ROUGE},  # the same as the v5.0 tag's
        }
    ),
    metric_keys=CURRENT_METRIC_KEYS,
    test01_accuracy_log_rng_seed=TEST01_ACCURACY_LOG_RNG_SEED,
    test04_settings=TEST04_SETTINGS,
    # v5.1's paths, and the code per model as the script at the v5.0 tag looks for it
    # (code/<model>/<implementation>/; the current checker only wants code/): a tree both read.
    layout=replace(LAYOUT_V5, code_per_model=True),
    checker=current_checker(NAME),
    sources=MappingProxyType(
        {
            **current_sources(NAME),
            "layout": Source(NAME, SINGLE_SCRIPT, "check_measurement_dir and check_results_dir"),
        }
    ),
    notes=(
        "GPT-J's results are its inferred token rates (RESULT_FIELD_BENCHMARK_OVERWRITE), not"
        " samples per second.",
    ),
    checker_defects=(
        CheckerDefect(
            r"Execution occurred in running check \S*/gptj-99(?:\.9)?/Offline/performance/run_1/"
            r"\S+\. Running min_query_count_check in PerformanceCheck",
            "the current checker has no GPT-J in OFFLINE_MIN_SPQ_SINCE_V4, so its closed Offline"
            " check raises a KeyError for any GPT-J run; the v5.0 tag's script checks 13,368"
            " samples per query, as our preflight does",
            current(PERFORMANCE_CHECK, "min_query_count_check: OFFLINE_MIN_SPQ_SINCE_V4[model]"),
        ),
    ),
)
