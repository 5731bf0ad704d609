"""What the round tables share: short names for the scenarios, the layouts and checkers of the two
generations of MLCommons' checker, and the accuracy.txt patterns each generation parses.

A pattern here is ours, written to match the same lines as the checker's `ACC_PATTERN` entry of
that name (re.match on each line of accuracy.txt, the value in group 1)."""

from __future__ import annotations

from types import MappingProxyType

from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rounds.facts import (
    COMPLIANCE_CHECK,
    CONSTANTS,
    CURRENT_CHECKER_COMMIT,
    LOADER,
    MEASUREMENTS_CHECK,
    PERFORMANCE_CHECK,
    SINGLE_SCRIPT,
    AuditTest,
    Checker,
    Layout,
    ModelRules,
    Source,
    current,
)

SS, MS, OFF, SRV = (
    Scenario.SINGLE_STREAM,
    Scenario.MULTI_STREAM,
    Scenario.OFFLINE,
    Scenario.SERVER,
)
EDGE = "edge"
DATACENTER = "datacenter"
BOTH = "datacenter,edge"

# The current checker, constants.py ACC_PATTERN.
CURRENT_PATTERNS = MappingProxyType(
    {
        # `accuracy=76.460%` (the ImageNet script) or `{"accuracy": 76.46, ...}`
        "acc": r'^(?:\{"accuracy|accuracy)[": ]*=?\s*([\d.]+)',
        "F1": r"""^\{["']exact_match["']:\s*[\d.]+,\s*["']f1["']:\s*([\d.]+)\}""",
        "DICE": r"^Accuracy:\s*mean\s*=\s*([\d.]+)",
        "mAP": r"^.*(?:mAP=|'Total':)\s*([\d.]+)",
        "AUC": r"^AUC=([\d.]+)",
        "ROUGE1": r"^.*'rouge1':\s+'?([\d.]+)",
        "ROUGE2": r"^.*'rouge2':\s+'?([\d.]+)",
        "ROUGEL": r"^.*'rougeL':\s+'?([\d.]+)",
        "GEN_LEN": r"^.*'gen_len':\s([\d.]+)",
        "TOKENS_PER_SAMPLE": r"^.*'tokens_per_sample':\s([\d.]+)",
        "CLIP_SCORE": r"^.*'CLIP_SCORE':\s+'?([\d.]+)",
        "FID_SCORE": r"^.*'FID_SCORE':\s+'?([\d.]+)",
    }
)
# v4.0's script, submission_checker.py ACC_PATTERN at the v4.0 tag: stricter for acc and mAP (the
# line must start with `accuracy=` / `mAP=`), one space before a ROUGE value, and RNN-T's WER line.
V4_0_PATTERNS = MappingProxyType(
    {
        "acc": r"^accuracy=([\d.]+)",
        "F1": CURRENT_PATTERNS["F1"],
        "DICE": CURRENT_PATTERNS["DICE"],
        "mAP": r"^mAP=([\d.]+)",
        "AUC": CURRENT_PATTERNS["AUC"],
        "WER": r"^Word Error Rate:.*, accuracy=([0-9.]+)%",
        "ROUGE1": r"^.*'rouge1':\s([\d.]+)",
        "ROUGE2": r"^.*'rouge2':\s([\d.]+)",
        "ROUGEL": r"^.*'rougeL':\s([\d.]+)",
        "GEN_LEN": CURRENT_PATTERNS["GEN_LEN"],
    }
)

# RESULT_FIELD_NEW of both generations: Server's result changed from scheduled to completed
# samples per second after v4.0.
CURRENT_METRIC_KEYS = MappingProxyType(
    {
        OFF: "result_samples_per_second",
        SRV: "result_completed_samples_per_sec",
        SS: "early_stopping_latency_ss",
        MS: "early_stopping_latency_ms",
    }
)
V4_0_METRIC_KEYS = MappingProxyType(
    {**CURRENT_METRIC_KEYS, SRV: "result_scheduled_samples_per_sec"}
)

# constants.py SRC_PATH, COMPLIANCE_PATH, MEASUREMENTS_PATH and REQUIRED_MEASURE_FILES.
LAYOUT_SINCE_V6_0 = Layout(
    source_dir="src",
    audits_root="results",
    measurements_root="results",
    measurements_json="measurements.json",
    measurement_files=("user.conf", "README.md"),
)
LAYOUT_V5 = Layout(
    source_dir="code",
    audits_root="compliance",
    measurements_root="measurements",
    measurements_json=None,
    measurement_files=("user.conf", "README.md"),
)
# v4.0's check_results_dir and check_measurement_dir: mlperf.conf too, and code/<model>/<impl>/.
LAYOUT_V4_0 = Layout(
    source_dir="code",
    audits_root="compliance",
    measurements_root="measurements",
    measurements_json=None,
    measurement_files=("mlperf.conf", "user.conf", "README.md"),
    code_per_model=True,
)


def current_checker(version: str) -> Checker:
    return Checker(
        "tools/submission/submission_checker/main.py",
        version,
        ("yaml",),  # its loader imports PyYAML
        CURRENT_CHECKER_COMMIT,
    )


V4_0_CHECKER = Checker(SINGLE_SCRIPT, "v4.0", (), "v4.0")  # beside it: log_parser.py

# TEST04's audit.config: the same in every round read (compliance/[nvidia/]TEST04/audit.config).
TEST04_SETTINGS = MappingProxyType(
    {"performance_issue_unique": 0, "performance_issue_same": 1, "performance_issue_same_index": 3}
)
# TEST01's audit.config: the same seed in every round read.
TEST01_ACCURACY_LOG_RNG_SEED = 720381539243781796

MIN_DURATION_MS = 600_000  # TEST_DURATION_MS in both generations

# The least query counts of the checker's min-queries, by the shape every round gives them.
IMAGE_QUERIES = MappingProxyType({SS: 1024, MS: 270_336, SRV: 270_336, OFF: 1})
EDGE_QUERIES = MappingProxyType({SS: 1024, OFF: 1})
SERVER_QUERIES = MappingProxyType({SS: 1024, SRV: 270_336, OFF: 1})
DATACENTER_QUERIES = MappingProxyType({SRV: 270_336, OFF: 1})


# 3D-UNet-99 and -99.9 as every round read from the current checker lists them (v5.0 to v6.1:
# constants.py's MODEL_CONFIG entries are the same in each).
CURRENT_UNET3D = tuple(
    ModelRules(
        name,
        (("DICE", 0.86170 * fraction),),
        dataset_size=43,
        performance_sample_count=43,
        scenarios=MappingProxyType({DATACENTER: (OFF,), EDGE: (SS, OFF), BOTH: (SS, OFF)}),
        audits=(AuditTest.TEST01,),
        accuracy_log_sampling_target=64,
        min_queries=EDGE_QUERIES,
        offline_min_samples_per_query=43,
    )
    for name, fraction in (("3d-unet-99", 0.99), ("3d-unet-99.9", 0.999))
)


def rules_by_model(*models: ModelRules) -> MappingProxyType[str, ModelRules]:
    return MappingProxyType({rules.model: rules for rules in models})


def current_sources(name: str) -> MappingProxyType[str, Source]:
    """Where each fact of a round the current checker holds was read (its MODEL_CONFIG entry and
    the module-level tables and checks it shares with the other rounds there)."""
    entry = f'MODEL_CONFIG["{name}"]'
    return MappingProxyType(
        {
            "models": current(CONSTANTS, f'{entry}["models"], ["model_mapping"]'),
            "scenarios": current(CONSTANTS, f'{entry}["required-scenarios-*"]'),
            "audits": current(
                CONSTANTS, f'{entry}["models_TEST01"], ["models_TEST04"], ["models_TEST06"]'
            ),
            "accuracy": current(CONSTANTS, f'{entry}["accuracy-target"]'),
            "accuracy_patterns": current(CONSTANTS, "ACC_PATTERN"),
            "performance_sample_count": current(CONSTANTS, f'{entry}["performance-sample-count"]'),
            "dataset_size": current(CONSTANTS, f'{entry}["dataset-size"]'),
            "min_duration_ms": current(CONSTANTS, "TEST_DURATION_MS"),
            "min_queries": current(CONSTANTS, f'{entry}["min-queries"]'),
            "offline_min_samples_per_query": current(
                PERFORMANCE_CHECK,
                "min_query_count_check, with OFFLINE_MIN_SPQ_SINCE_V4 of constants.py",
            ),
            "server_latency_ns": current(CONSTANTS, f'{entry}["latency-constraint"]'),
            "seeds": current(CONSTANTS, f'{entry}["seeds"]'),
            "test05_seeds": current(COMPLIANCE_CHECK, "get_test_list (no TEST05 since v5.0)"),
            "test01": current(
                "compliance/TEST01/resnet50/audit.config", "(and TEST01/<model>/audit.config)"
            ),
            "test04": current("compliance/TEST04/audit.config"),
            "layout": current(
                LOADER,
                "with SRC_PATH, MEASUREMENTS_PATH, COMPLIANCE_PATH of constants.py and "
                f"REQUIRED_MEASURE_FILES as {MEASUREMENTS_CHECK} reads it",
            ),
            "metric_keys": current(CONSTANTS, f'RESULT_FIELD_NEW["{name}"]'),
            "checker": current("tools/submission/submission_checker/main.py", "--version"),
        }
    )
