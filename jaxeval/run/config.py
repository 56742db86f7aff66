"""What a run is: its YAML config merged under the flags, --model_args, the config hash and the
deterministic run name that lets a rerun of the same command find its journal."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Mapping

from jaxeval.errors import ConfigError
from jaxeval.models.config import CONFIG_OVERRIDES, override_value
from jaxeval.io.inputs import read_text
from jaxeval.io.fs import join
from jaxeval.options.flags import RunFlags
from jaxeval.options.model import ModelOptions
from jaxeval.options.run import RunOptions
from jaxeval.options.settings import names_of, parse_value

# Flags that cannot change a single number of the results, or whose effect the model fingerprint
# already holds: the shared options marked hashed=False (jaxeval.options.model, jaxeval.options.run:
# the model, its quantization and KV-cache flags, the mapping; the output, journal, batching and
# logging flags) and those of the judges and the plan (docs/results_schema.md). Every other shared flag
# is hashed into config_hash, and so are the settings of the benchmarks whose tasks run, except those
# their Settings mark hashed=False; no other benchmark's settings are (they cannot rename the run).
NOT_HASHED = frozenset(names_of(ModelOptions, hashed=False) | names_of(RunOptions, hashed=False)
                       | {"batch_size_auto", "func", "command", "journal",
                          "judge_timeout", "judge_retries", "judge_max_failures",  # the judges' patience
                          "accelerator", "mfu", "mbu", "calibrate", "judge_price", "plan_json",  # the plan's
                          "target", "target_choice"})  # run --target: how the batch and mesh were chosen
# --reference and its bootstrap settings: a report made after the run, never part of it
NOT_RECORDED = frozenset({"func", "command", "journal", "journal_mode", "reference", "bootstrap", "bootstrap_seed",
                          "ci"})


def load_yaml_config(path: str, actions: dict[str, argparse.Action]) -> dict:
    """The run config file (keys mirror `jaxeval run` flags, without dashes) as a dict of flag
    values (by dest), checked and converted as the flags would be; lists become comma-separated
    strings, a model_args mapping becomes k=v,... actions: key -> argparse action (a deprecated
    alias under its old name)."""
    import yaml

    text = read_text(path, ConfigError, "run config")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None
    except RecursionError:
        raise ConfigError(f"{path}: YAML nested too deeply to read") from None
    _check_size(path, data)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run config is a mapping of flag names to values")
    values = {}
    for key, value in data.items():
        dest = str(key).lstrip("-").replace("-", "_")
        if dest not in actions or dest == "config":
            raise ConfigError(f"{path}: unknown key '{key}' (keys are `jaxeval run` flags: "
                              f"{', '.join(sorted(set(actions) - {'config'}))})")
        action = actions[dest]
        if hasattr(action, "warn_key"):  # a deprecated spelling (jaxeval.benchmarks.settings.DeprecatedAlias)
            action.warn_key(f"{path}: key '{key}'")
        values[action.dest] = _flag_value(path, key, value, action)
    return values


YAML_NODES_MAX = 10_000  # far more than any run config; an alias bomb expands past it at once
YAML_DEPTH_MAX = 8  # model_args: rope_scaling: {...} is three levels under the file's mapping


def _check_size(path: str, data) -> None:
    """Refuse a config whose values, aliases expanded, hold more than YAML_NODES_MAX nodes or nest
    deeper than YAML_DEPTH_MAX ("billion laughs": a few lines of aliases that expand to millions of
    values once joined into a flag's text). The walk stops at the first limit crossed."""
    seen, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > YAML_NODES_MAX:
            raise ConfigError(f"{path}: more than {YAML_NODES_MAX} values once its aliases are expanded "
                              f"(an alias bomb?); a run config is a short mapping of flags")
        if depth > YAML_DEPTH_MAX:
            raise ConfigError(f"{path}: values nested deeper than {YAML_DEPTH_MAX} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        stack.extend((child, depth + 1) for child in children)


def _flag_value(path: str, key, value, action: argparse.Action):
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: {key}: expected true or false, got {value!r}")
        return value
    if isinstance(value, dict) and action.dest not in ("model_args", "gen_kwargs"):
        raise ConfigError(f"{path}: {key}: expected a single value, got a mapping")
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple, dict)) for v in value):
        raise ConfigError(f"{path}: {key}: expected a list of plain values, got nested lists or mappings")
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    elif isinstance(value, dict) and action.dest == "model_args":  # nested values (rope_scaling) as JSON
        value = ",".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in value.items())
    if action.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # `scale: 2` is the flag's 2.0, not another run
    if isinstance(value, str) and action.type is not None:
        try:
            value = action.type(value)
        except argparse.ArgumentTypeError as e:  # a flag type with its own message (--limit)
            raise ConfigError(f"{path}: {key}: {e}") from None
        except (TypeError, ValueError):
            kind = getattr(action.type, "__name__", "value")
            raise ConfigError(f"{path}: {key}: {value!r} is not a valid {kind}") from None
    if action.choices is not None and value not in action.choices:
        raise ConfigError(f"{path}: {key}: {value!r} is not one of {', '.join(map(str, action.choices))}")
    if action.type is None and value is not None and not isinstance(value, (str, dict)):
        # a text flag (--tasks, --output_path, --mesh, ...): a number or true/false here is a mistake
        # the flag's own code would meet as an AttributeError
        raise ConfigError(f"{path}: {key}: expected text, got {type(value).__name__} {value!r}")
    return value


def _top_level_parts(text: str) -> list[str]:
    """Split at commas outside {...}, [...] and quotes: 'a=1,b={"x":1,"y":2}' -> ['a=1', 'b={"x":1,"y":2}']."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_model_args(text: str | None) -> dict:
    """'k=v,k2=v2' -> {k: v, k2: v2} (lm-eval's --model_args). A value written as JSON
    (rope_scaling={"rope_type":"yarn",...}) is parsed as JSON; other values stay strings."""
    pairs = {}
    for part in _top_level_parts(text or ""):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--model_args: '{_short(part)}' is not key=value")
        value = value.strip()
        if value[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise ConfigError(f"--model_args: {key.strip()}={_short(value)} is not valid JSON ({e})") from None
            except RecursionError:
                raise ConfigError(f"--model_args: {key.strip()}: JSON nested too deeply to read") from None
        pairs[key.strip()] = value
    return pairs


GEN_KWARGS = ("temperature", "top_p", "do_sample", "max_gen_toks", "max_new_tokens", "until")
HASHED_WHEN_SET = frozenset({"gen_kwargs"})  # hashed only when given: runs without it keep their names


def _gen_value(text: str):
    """lm-eval's reading of a k=v value: JSON (numbers, true/false, lists, quoted strings), True /
    False in any case, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"true": True, "false": False}.get(text.lower(), text)
    except RecursionError:
        raise ConfigError(f"--gen_kwargs: {_short(text)}: JSON nested too deeply to read") from None


def _short(text: str, limit: int = 80) -> str:
    """A user's value in a one-line message: its start, when it is long."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def parse_gen_kwargs(given):
    """--gen_kwargs (lm-eval's `temperature=0,top_p=1,max_gen_toks=64,until=["\\n"]`, a JSON
    object, or a YAML mapping) -> jaxeval.generation.GenKwargs, or None when empty; a ConfigError
    names an unknown key or a bad value."""
    from jaxeval.generation import GenKwargs

    if given is None or (isinstance(given, str) and not given.strip()):
        return None
    if isinstance(given, dict):
        pairs = dict(given)
    elif given.strip().startswith("{"):
        from jaxeval.io.inputs import parse_json

        pairs = parse_json(given, "--gen_kwargs", ConfigError)
        if not isinstance(pairs, dict):
            raise ConfigError(f"--gen_kwargs: a JSON object of settings, found {type(pairs).__name__}")
    else:
        pairs = {}
        for part in _top_level_parts(given):
            key, sep, value = part.partition("=")
            if not part.strip():
                continue
            if not sep or not key.strip():
                raise ConfigError(f"--gen_kwargs: '{_short(part)}' is not key=value")
            pairs[key.strip()] = _gen_value(value.strip())
    unknown = sorted(set(pairs) - set(GEN_KWARGS))
    if unknown:
        raise ConfigError(f"--gen_kwargs: unknown key '{unknown[0]}'; known: {', '.join(GEN_KWARGS)}")

    def number(key, kind, ok, what):
        value = pairs[key]
        if (isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int)
                or not math.isfinite(value) or not ok(value)):  # a YAML .inf arrives as a float, not as text
            raise ConfigError(f"--gen_kwargs: {key}={value!r} must be {what}")
        return kind(value)

    budget = {key: number(key, int, lambda v: v >= 1, "a positive integer")
              for key in ("max_gen_toks", "max_new_tokens") if key in pairs}
    if len(set(budget.values())) > 1:
        raise ConfigError(f"--gen_kwargs: max_gen_toks={budget['max_gen_toks']} and max_new_tokens="
                          f"{budget['max_new_tokens']} differ")
    until = pairs.get("until")
    if isinstance(until, str):
        until = [until]
    if until is not None and (not isinstance(until, list) or not all(isinstance(s, str) and s for s in until)):
        raise ConfigError(f"--gen_kwargs: until={pairs['until']!r} must be a string or a list of non-empty strings")
    do_sample = pairs.get("do_sample")
    if do_sample is not None and not isinstance(do_sample, bool):
        raise ConfigError(f"--gen_kwargs: do_sample={do_sample!r} must be true or false")
    return GenKwargs(
        temperature=number("temperature", float, lambda v: v >= 0, "a number >= 0") if "temperature" in pairs else None,
        top_p=number("top_p", float, lambda v: 0 < v <= 1, "a number in (0, 1]") if "top_p" in pairs else None,
        do_sample=do_sample, max_new_tokens=next(iter(budget.values()), None),
        until=tuple(until) if until is not None else None)


def apply_model_args(flags: RunFlags) -> RunFlags:
    """The model options with the ones --model_args names replaced (pretrained= is --model), and its
    config.json fields (CONFIG_OVERRIDES) as config_overrides: recorded and hashed into the run."""
    known = names_of(ModelOptions) - {"config_overrides"}
    changes, overrides = {}, {}
    for key, value in parse_model_args(flags.run.model_args).items():
        dest = {"pretrained": "model", "config": "model_config"}.get(key, key)
        if dest in CONFIG_OVERRIDES:
            overrides[dest] = override_value(key, value)
            continue
        if dest not in known:
            raise ConfigError(f"--model_args: unknown key '{key}'; known: "
                              f"{', '.join(sorted(known - {'model'}) + ['pretrained'])}, and the config.json "
                              f"fields {', '.join(CONFIG_OVERRIDES)}")
        changes[dest] = parse_value(ModelOptions, dest, value, "--model_args")
    return flags.with_model(**changes, config_overrides=overrides)


def _benchmark_flags(flags: RunFlags, tasks: list[str], benchmarks: Mapping) -> tuple[set[str], dict, set[str]]:
    """(every benchmark's setting flags, {flag: value} of the run's benchmarks' settings, the
    flags of those that are not hashed). benchmarks: task -> its Benchmark, every task jaxeval runs
    (jaxeval.benchmarks.registry.run_tasks(), handed down by the caller)."""
    chosen = {benchmarks[task].name for task in tasks if task in benchmarks}
    every, own, unhashed = set(), {}, set()
    for benchmark in dict.fromkeys(benchmarks.values()):
        settings = benchmark.settings(flags.extra)
        recorded = benchmark.recorded_settings(settings)
        every |= set(recorded)
        if benchmark.name in chosen:
            own.update(recorded)
            unhashed |= set(recorded) - set(benchmark.hashed_settings(settings))
    return every, own, unhashed


def recorded_config(flags: RunFlags, tasks: list[str], benchmarks: Mapping) -> dict:
    """The run's settings (flags after YAML and model_args): the shared ones and the settings of
    the benchmarks whose tasks run, JSON-ready, sorted."""
    every, own, _ = _benchmark_flags(flags, tasks, benchmarks)
    config = {key: value for key, value in flags.values().items() if key not in NOT_RECORDED and key not in every}
    config.update(own)
    config = dict(sorted(config.items()))
    config["tasks"] = list(tasks)
    config["model_args"] = parse_model_args(config.get("model_args"))
    if "gen_kwargs" in config:  # canonical (max_gen_toks as max_new_tokens), so spellings share a run
        gen_kwargs = parse_gen_kwargs(config["gen_kwargs"])
        config["gen_kwargs"] = gen_kwargs.recorded() if gen_kwargs is not None else None
    return json.loads(json.dumps(config, default=str))


def not_hashed_keys(flags: RunFlags, tasks: list[str], benchmarks: Mapping) -> frozenset[str]:
    """The recorded keys config_hash leaves out: NOT_HASHED and the run's unhashed settings."""
    return NOT_HASHED | _benchmark_flags(flags, tasks, benchmarks)[2]


def config_hash(config: dict, not_hashed=NOT_HASHED) -> str:
    """sha256 of the config's hashed keys (sorted JSON), first 16 hex digits: deterministic in the
    shared settings and the run's benchmarks' own settings, and in nothing else."""
    hashed = {key: value for key, value in config.items() if key not in not_hashed
              and not (key in HASHED_WHEN_SET and value is None)}
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


def model_name(model_path: str) -> str:
    name = str(model_path).rstrip("/").split("/")[-1] or "model"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def run_name(model_path: str, tasks: list[str], hash_: str, fingerprint: str | None = None) -> str:
    """<model folder name>-<tasks>-<config hash>[-<model fingerprint>]: two models in folders of
    the same name (a/final, b/final) get runs, journals and results files of their own."""
    stem = f"{model_name(model_path)}-{'+'.join(tasks)}-{hash_[:8]}"
    return f"{stem}-{fingerprint[:8]}" if fingerprint else stem


def shard_suffix(shard: tuple[int, int]) -> str:
    index, count = shard
    return "" if count == 1 else f".p{index}-of-{count}"


def output_folder(run: RunOptions) -> str:
    """Where journal and samples go: --output_path, or the folder of --out when that is given."""
    if not run.out:
        return str(run.output_path)
    out = str(run.out)
    return out.rsplit("/", 1)[0] if "/" in out else "."


def journal_path(run: RunOptions, name: str, shard: tuple[int, int]) -> str:
    return join(output_folder(run), f"{name}{shard_suffix(shard)}.journal.jsonl")


def results_path(run: RunOptions, name: str) -> str:
    return run.out if run.out else join(run.output_path, f"{name}.json")

