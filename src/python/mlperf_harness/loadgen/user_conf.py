"""Read and check a LoadGen user.conf before any work starts, so that every problem is one line that
names the file and the line.

LoadGen's own reader (TestSettings::FromConfig in test_settings_internal.cc) splits each line on
whitespace into `key = value`, logs a bad line into the next test's detail log without naming its
text, and silently ignores what it does not look up: unknown keys, misspelt models and scenarios, a
key under a scenario that never reads it, `key=value` without spaces, a line with no value. This
module follows the same grammar and refuses all of those, and the values LoadGen would replace or
misread (a negative target_qps, a fraction where it reads a whole number).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario, conf_model


class _Kind(Enum):
    COUNT = "a whole number of 0 or more"
    POSITIVE_COUNT = "a whole number above 0"
    FLAG = "0 or 1"
    RATE = "a number above 0"
    LATENCY = "a number of milliseconds above 0"
    PERCENT = "a percentage above 0 and at most 100"


_ALL = frozenset(Scenario)
_SERVER = frozenset({Scenario.SERVER})
_LATENCY_BOUND = frozenset({Scenario.SERVER, Scenario.SINGLE_STREAM, Scenario.MULTI_STREAM})


@dataclass(frozen=True)
class _Key:
    kind: _Kind
    scenarios: frozenset[Scenario] = _ALL  # the scenarios under which LoadGen looks the key up


# Every key LoadGen reads from a user.conf (FromConfig with conf_type 1), and under which scenarios.
KEYS: dict[str, _Key] = {
    "min_duration": _Key(_Kind.COUNT),
    "max_duration": _Key(_Kind.COUNT),
    "min_query_count": _Key(_Kind.COUNT),
    "max_query_count": _Key(_Kind.COUNT),
    "performance_sample_count_override": _Key(_Kind.COUNT),
    "accuracy_sample_count_override": _Key(_Kind.COUNT),
    "performance_issue_unique": _Key(_Kind.FLAG),
    "performance_issue_same": _Key(_Kind.FLAG),
    "performance_issue_same_index": _Key(_Kind.COUNT),
    "sample_concatenate_permutation": _Key(_Kind.FLAG),
    "print_timestamps": _Key(_Kind.FLAG),
    "accuracy_log_rng_seed": _Key(_Kind.COUNT),
    "accuracy_log_sampling_target": _Key(_Kind.COUNT),
    "use_token_latencies": _Key(_Kind.FLAG),
    "infer_token_latencies": _Key(_Kind.FLAG),
    "token_latency_scaling_factor": _Key(_Kind.COUNT),
    "target_qps": _Key(_Kind.RATE, frozenset({Scenario.SERVER, Scenario.OFFLINE})),
    "target_latency": _Key(_Kind.LATENCY, _LATENCY_BOUND),
    "target_latency_percentile": _Key(_Kind.PERCENT, _LATENCY_BOUND),
    "samples_per_query": _Key(_Kind.POSITIVE_COUNT, frozenset({Scenario.MULTI_STREAM})),
    "coalesce_queries": _Key(_Kind.FLAG, _SERVER),
    "max_async_queries": _Key(_Kind.COUNT, _SERVER),
    "ttft_latency": _Key(_Kind.COUNT, _SERVER),
    "tpot_latency": _Key(_Kind.COUNT, _SERVER),
}
# Keys LoadGen takes from its built-in mlperf.conf only: in a user.conf they would do nothing.
_MLPERF_CONF_ONLY = (
    "qsl_rng_seed",
    "sample_index_rng_seed",
    "schedule_rng_seed",
    "accuracy_log_probability",
    "test05",
    "test05_qsl_rng_seed",
    "test05_sample_index_rng_seed",
    "test05_schedule_rng_seed",
)
# Models of LoadGen 6's built-in mlperf.conf and the submission checker's names: a user.conf shared
# between benchmarks may hold their lines (LoadGen skips them); any other model is a misspelling.
KNOWN_MODELS = frozenset(
    (
        "3d-unet",
        "3d-unet-99",
        "3d-unet-99.9",
        "bert",
        "bert-99",
        "bert-99.9",
        "deepseek-r1",
        "deepseek-r1-interactive",
        "dlrm",
        "dlrm-v2",
        "dlrm-v3",
        "gpt-oss-120b",
        "gpt-oss-120b-interactive",
        "gptj",
        "gptj-99",
        "gptj-99.9",
        "llama2-70b",
        "llama2-70b-99",
        "llama2-70b-99.9",
        "llama2-70b-interactive",
        "llama3_1-405b",
        "llama3_1-405b-interactive",
        "llama3_1-8b",
        "llama3_1-8b-edge",
        "llama3_1-8b-interactive",
        "mixtral-8x7b",
        "pointpainting",
        "qwen3-vl-235b-a22b",
        "resnet",
        "resnet50",
        "retinanet",
        "rgat",
        "rnnt",
        "ssd-mobilenet",
        "stable-diffusion-xl",
        "wan-2.2-t2v-a14b",
        "whisper",
        "yolo",
    )
)
_WILDCARD = "*"
# strtoul/strtod accept these; a leading 0 means octal to strtoul, so "010" is refused (see below).
_INTEGER = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|\d+)")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class ConfLine:
    number: int
    model: str
    scenario: str  # a Scenario's value, or "*"
    key: str
    value: str  # as written: LoadGen reads it with strtoull or strtod depending on the key

    @property
    def text(self) -> str:
        return f"{self.model}.{self.scenario}.{self.key} = {self.value}"


class _LineError(Exception):
    pass


def read_user_conf(path: Path, model: str) -> list[ConfLine]:
    """The settings lines of `path` for any model; a HarnessError names the first bad line."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise HarnessError(f"user.conf not found: {path}") from None
    except OSError as error:
        raise HarnessError(f"cannot read user.conf {path}: {error.strerror or error}") from None
    lines: list[ConfLine] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            parsed = _parse_line(line, model)
        except _LineError as error:
            raise HarnessError(
                f"{path} line {number}: {error} (the line: {line.strip()!r})"
            ) from None
        if parsed is not None:
            lines.append(ConfLine(number, *parsed))
    _check_combinations(path, lines, model)
    return lines


def applicable(lines: Sequence[ConfLine], model: str, scenario: Scenario) -> list[ConfLine]:
    """The lines LoadGen applies to one run, one per key: its most specific match, as LoadGen
    looks them up (model.scenario, then *.scenario, model.*, *.*), the last such line of a file."""
    model, scenario = conf_model(model, scenario), scenario.loadgen  # Interactive: Server's lines
    chosen: list[ConfLine] = []
    for key, spec in KEYS.items():
        if scenario not in spec.scenarios:
            continue
        for wanted_model, wanted_scenario in (
            (model, scenario.value),
            (_WILDCARD, scenario.value),
            (model, _WILDCARD),
            (_WILDCARD, _WILDCARD),
        ):
            found = [
                line
                for line in lines
                if (line.model, line.scenario, line.key) == (wanted_model, wanted_scenario, key)
            ]
            if found:
                chosen.append(found[-1])
                break
    return sorted(chosen, key=lambda line: line.number)


def _parse_line(line: str, model: str) -> tuple[str, str, str, str] | None:
    """LoadGen's grammar: tokens split on whitespace; a lone "#" before the value ends the line;
    `key = value`, the value an integer or a double."""
    key: str | None = None
    values: list[str] = []
    seen_equals = False
    for token in line.split():
        if token == "#" and not seen_equals:
            break
        if key is None:
            key = token
        elif not seen_equals:
            if token != "=" and key.startswith("#"):
                raise _LineError(
                    "LoadGen sees a comment only at a '#' that stands apart ('# text')"
                )
            if token != "=":
                raise _LineError(
                    "expected 'model.scenario.key = value' (LoadGen rejects this line)"
                )
            seen_equals = True
        elif token.startswith("#"):
            raise _LineError("a comment after a value is an error to LoadGen: give it its own line")
        elif not (_INTEGER.fullmatch(token) or _NUMBER.fullmatch(token)):
            raise _LineError(f"the value {token!r} is not a number (LoadGen rejects this line)")
        else:
            values.append(token)
    if key is None:
        return None  # blank, or a comment
    if key.startswith("#") and values:
        return None  # "#model.scenario.key = 5": a key LoadGen stores and never reads
    if "=" in key:
        raise _LineError("put spaces around '=': LoadGen would ignore this line")
    if not values:
        if key.startswith("#"):
            return None  # a one-word comment such as "#notes"
        raise _LineError(
            "no value: expected 'model.scenario.key = value' (LoadGen would ignore it)"
        )
    if len(values) > 1:
        raise _LineError("more than one value (LoadGen would silently take the last)")
    parts = key.rsplit(".", 2)  # model names may hold dots (bert-99.9); scenarios and keys do not
    if len(parts) != 3 or not all(parts):
        raise _LineError("the key must be 'model.scenario.key', e.g. resnet50.Offline.target_qps")
    line_model, scenario, name = parts
    _check_model(line_model, model)
    scenarios = _check_scenario(scenario)
    _check_key(name, scenarios)
    _check_value(name, values[0], scenarios)
    return line_model, scenario, name, values[0]


def _check_model(line_model: str, model: str) -> None:
    if line_model in (_WILDCARD, model) or line_model in KNOWN_MODELS:
        return
    raise _LineError(
        f"unknown model {line_model!r}{_suggest(line_model, [model, *sorted(KNOWN_MODELS)])} "
        f"(this run's model is {model}; '*' means every model)"
    )


def _check_scenario(scenario: str) -> frozenset[Scenario]:
    if scenario == _WILDCARD:
        return _ALL
    for known in Scenario:
        if known.value == scenario:
            return frozenset({known})
    names = [known.value for known in Scenario]
    raise _LineError(
        f"unknown scenario {scenario!r}{_suggest(scenario, names, case=True)}: LoadGen matches "
        f"{', '.join(names)} or '*' exactly"
    )


def _check_key(name: str, scenarios: frozenset[Scenario]) -> None:
    if name == "mode":
        raise _LineError("the mode is --test_mode's: the harness overrides a user.conf mode")
    if name in _MLPERF_CONF_ONLY:
        raise _LineError(f"{name} comes from mlperf.conf only: LoadGen ignores it in a user.conf")
    spec = KEYS.get(name)
    if spec is None:
        raise _LineError(f"unknown key {name!r}{_suggest(name, list(KEYS))}")
    if not scenarios & spec.scenarios:
        where = ", ".join(s.value for s in Scenario if s in spec.scenarios)
        (scenario,) = scenarios
        raise _LineError(
            f"LoadGen reads {name} for {where} only, never for {scenario.value}: it would ignore it"
        )


def _check_value(name: str, text: str, scenarios: frozenset[Scenario]) -> None:
    kind = KEYS[name].kind
    # Server reads target_latency as whole milliseconds (strtoull), the others as a double.
    whole = kind in (_Kind.COUNT, _Kind.POSITIVE_COUNT, _Kind.FLAG) or (
        name == "target_latency" and Scenario.SERVER in scenarios
    )
    if whole:
        if not _INTEGER.fullmatch(text) or text.startswith(("-", "+")):
            server = " (Server reads it in whole milliseconds)" if kind is _Kind.LATENCY else ""
            raise _LineError(f"{name} must be {kind.value}, got {text}{server}")
        if len(text) > 1 and text.startswith("0") and text[1] not in "xX":
            raise _LineError(f"{text} would be read as an octal number by LoadGen: drop the 0")
    hexadecimal = text.lstrip("+-")[:2].lower() == "0x"
    value = float(int(text, 16)) if hexadecimal else float(text)
    problem = (
        (kind is _Kind.FLAG and value not in (0, 1))
        or (kind in (_Kind.RATE, _Kind.LATENCY, _Kind.POSITIVE_COUNT) and not value > 0)
        or (kind is _Kind.PERCENT and not 0 < value <= 100)
    )
    if problem:
        raise _LineError(f"{name} must be {kind.value}, got {text} (LoadGen would not use it)")


def _check_combinations(path: Path, lines: Sequence[ConfLine], model: str) -> None:
    """Settings that are fine alone but that LoadGen refuses together, for this model."""
    for scenario in Scenario:
        values = {line.key: line for line in applicable(lines, model, scenario)}
        unique, same = values.get("performance_issue_unique"), values.get("performance_issue_same")
        if unique and same and unique.value == same.value == "1":
            raise HarnessError(
                f"{path} lines {unique.number} and {same.number}: performance_issue_unique and "
                "performance_issue_same cannot both be 1 (LoadGen logs an error)"
            )


def _suggest(word: str, choices: Sequence[str], case: bool = False) -> str:
    if case:
        exact = [choice for choice in choices if choice.lower() == word.lower()]
        if exact:
            return f" (did you mean {exact[0]}?)"
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]}?)" if close else ""
