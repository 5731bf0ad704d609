"""MLPerf Inference v6.1, from the current checker's `MODEL_CONFIG["v6.1"]` (constants.py) and its
checks; the compliance tests' audit.config files at the same commit."""

from __future__ import annotations

from types import MappingProxyType

from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rounds.common import (
    BOTH,
    CURRENT_METRIC_KEYS,
    CURRENT_PATTERNS,
    CURRENT_UNET3D,
    DATACENTER,
    EDGE,
    EDGE_QUERIES,
    IMAGE_QUERIES,
    LAYOUT_SINCE_V6_0,
    MIN_DURATION_MS,
    MS,
    OFF,
    SERVER_QUERIES,
    SRV,
    SS,
    TEST01_ACCURACY_LOG_RNG_SEED,
    TEST04_SETTINGS,
    current_checker,
    current_sources,
    rules_by_model,
)
from mlperf_harness.submission.rounds.facts import AuditTest, ModelRules, Round

NAME = "v6.1"

_EDGE_SS_OFF = MappingProxyType({EDGE: (SS, OFF), BOTH: (SS, OFF)})

ROUND = Round(
    name=NAME,
    listed_models=(
        "resnet",
        "bert-99",
        "bert-99.9",
        "3d-unet-99",
        "3d-unet-99.9",
        "llama3.1-8b",
        "llama3.1-8b-edge",
        "llama2-70b-99.9",
        "stable-diffusion-xl",
        "rgat",
        "deepseek-r1",
        "whisper",
        "gpt-oss-120b",
        "wan-2.2-t2v-a14b",
        "qwen3-vl-235b-a22b",
        "qwen3.6-27b",
        "dlrm-v3",
        "yolo-95",
        "yolo-99",
        "e2e-rag-qna",
        "e2e-rag-db",
    ),
    models=rules_by_model(
        # ResNet-50 is edge-only since v5.1: a plain "datacenter" system cannot submit it.
        ModelRules(
            "resnet50",
            (("acc", 76.46 * 0.99),),
            dataset_size=50_000,
            performance_sample_count=1024,
            scenarios=MappingProxyType({EDGE: (SS, MS, OFF), BOTH: (SS, MS, OFF, SRV)}),
            audits=(AuditTest.TEST01, AuditTest.TEST04),
            accuracy_log_sampling_target=4096,
            server_latency_ns=15_000_000,
            min_queries=IMAGE_QUERIES,
            offline_min_samples_per_query=24_576,
            checker_model="resnet",
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
        *CURRENT_UNET3D,
        # Llama2-70B: Offline required, Server and Interactive optional (datacenter); ROUGE at
        # 99.9% and tokens per sample within 90-110% of 294.45 (accuracy-upper-limit).
        ModelRules(
            "llama2-70b-99.9",
            (
                ("ROUGE1", 44.4312 * 0.999),
                ("ROUGE2", 22.0352 * 0.999),
                ("ROUGEL", 28.6162 * 0.999),
                ("TOKENS_PER_SAMPLE", 294.45 * 0.9),
            ),
            dataset_size=24_576,
            performance_sample_count=24_576,
            scenarios=MappingProxyType({DATACENTER: (OFF,), BOTH: (OFF,)}),
            audits=(AuditTest.TEST06,),
            accuracy_log_sampling_target=None,
            server_latency_ns=20_000_000_000,
            min_queries=SERVER_QUERIES,
            offline_min_samples_per_query=24_576,
            optional=MappingProxyType(
                {DATACENTER: (SRV, Scenario.INTERACTIVE), BOTH: (SRV, Scenario.INTERACTIVE)}
            ),
            accuracy_upper=(("TOKENS_PER_SAMPLE", 294.45 * 1.1),),
            metric_keys=MappingProxyType(
                {
                    OFF: "result_tokens_per_second",
                    SRV: "result_completed_tokens_per_second",
                    Scenario.INTERACTIVE: "result_completed_tokens_per_second",
                }
            ),
        ),
        # SDXL: the checker bounds both metrics from below and above (accuracy-upper-limit).
        ModelRules(
            "stable-diffusion-xl",
            (("CLIP_SCORE", 31.68631873), ("FID_SCORE", 23.01085758)),
            dataset_size=5000,
            performance_sample_count=5000,
            scenarios=MappingProxyType({EDGE: (SS, OFF), BOTH: (SS, OFF, SRV)}),
            audits=(AuditTest.TEST01, AuditTest.TEST04),
            accuracy_log_sampling_target=128,
            server_latency_ns=20_000_000_000,
            min_queries=MappingProxyType({SS: 1024, SRV: 270_336, OFF: 1}),
            offline_min_samples_per_query=5000,
            accuracy_upper=(("CLIP_SCORE", 31.81331801), ("FID_SCORE", 23.95007626)),
        ),
    ),
    seeds=MappingProxyType(
        {
            "qsl_rng_seed": 2085463073848966840,
            "sample_index_rng_seed": 2747215439041700203,
            "schedule_rng_seed": 16159082839903944936,
        }
    ),
    test05_seeds=None,
    min_duration_ms=MIN_DURATION_MS,
    accuracy_patterns=MappingProxyType(
        {
            k: CURRENT_PATTERNS[k]
            for k in (
                *("acc", "F1", "DICE", "CLIP_SCORE", "FID_SCORE"),
                *("ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE"),
            )
        }
    ),
    # RESULT_FIELD_NEW["v6.1"] adds Interactive, as Server's.
    metric_keys=MappingProxyType(
        {**CURRENT_METRIC_KEYS, Scenario.INTERACTIVE: CURRENT_METRIC_KEYS[SRV]}
    ),
    test01_accuracy_log_rng_seed=TEST01_ACCURACY_LOG_RNG_SEED,
    test04_settings=TEST04_SETTINGS,
    layout=LAYOUT_SINCE_V6_0,
    checker=current_checker(NAME),
    sources=current_sources(NAME),
)
