"""The checks of the model flags against the model's own config, before any weight is read.

`run` makes them before it loads the model, and `validate` and `plan` make the same ones, so a
run is never refused, after minutes of loading, for something `validate` passed: --model_args
overrides (through the config reader, which refuses what load_model would), --quantize and
--quant_group (the groups must divide every matmul's input rows), --attention, --kv_cache (for
this model and for the tasks: teacher-forced reads cannot use SnapKV), --mesh (its size against
the devices here and the model's heads), --seed and --gen_kwargs' generation budget against the
model's context. Each is one ConfigError naming the flag.
"""

from __future__ import annotations

import math

from jaxeval.errors import ConfigError
from jaxeval.options.flags import RunFlags
from jaxeval.options.model import ModelOptions

SEED_MAX = 2**32 - 1  # numpy's seed range (cli.cmd_run seeds numpy with --seed)


def check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ConfigError(f"--seed must be an integer from 0 to {SEED_MAX}, got {seed!r}")


def check_quant_group(model: ModelOptions) -> None:
    group = model.quant_group
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise ConfigError(f"--quant_group must be a positive integer (rows per int4 scale), got {group!r}")


def check_override_values(overrides: dict) -> None:
    """Overrides the config reader would ignore for this model (a sliding window for a model without
    sliding layers) are still refused when out of range: the user meant something by them."""
    for key in ("sliding_window", "max_position_embeddings", "original_max_position_embeddings"):
        value = overrides.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"--model_args: {key}={value!r} must be a positive integer")


def model_config(model: ModelOptions):
    """The run's ModelConfig: config.json (or the GGUF file's metadata) with --model_args overrides."""
    from jaxeval.models.config import check_overrides
    from jaxeval.weights.loader import read_config, resolve_model_path
    from jaxeval.weights.maxtext import maxtext_checkpoint_of

    overrides = model.config_overrides or {}
    check_override_values(overrides)
    maxtext = maxtext_checkpoint_of(model, overrides)  # a MaxText checkpoint: its config, no array read
    if maxtext:
        return maxtext.config
    return read_config(resolve_model_path(model.model), check_overrides(overrides, "load_model"))[2]


def check_quantization(model: ModelOptions, config) -> None:
    from jaxeval.models.param_layout import param_shapes
    from jaxeval.models.quant import check_quantizable, check_quantize, layer_matmuls

    kind = model.quantize
    try:
        check_quantize(kind, model.quant_group)
    except ConfigError as e:
        raise ConfigError(f"--quantize / --quant_group: {e}") from None
    if kind in (None, "", "none"):
        return
    check_quantizable(config, f"--quantize {kind}")
    if kind != "int4":
        return
    group, shapes = model.quant_group, param_shapes(config)
    for stack in ("layers", "linear_layers"):
        for name, in_shape, _ in layer_matmuls(shapes.get(stack, {}), stack):
            if math.prod(in_shape) % group:
                raise ConfigError(f"--quant_group {group}: does not divide the {math.prod(in_shape)} input rows of "
                                  f"{stack}/{name}; choose an even divisor (e.g. 32, 64, 128)")


def check_mesh(model: ModelOptions, config) -> None:
    """--mesh against the devices here and the model (make_mesh and check_mesh_fits, as load_model)."""
    spec = model.mesh
    if spec is None:
        return
    from jaxeval.models.hybrid_layout import is_hybrid
    from jaxeval.models.mesh import make_mesh
    from jaxeval.models.sharding import check_mesh_fits

    try:
        mesh = make_mesh(spec, num_heads=config.num_heads, num_kv_heads=config.num_kv_heads,
                         context_parallel=not is_hybrid(config))
        check_mesh_fits(config, mesh, model.prefill_chunk)
    except ConfigError as e:
        raise ConfigError(str(e) if "mesh" in str(e) else f"--mesh {spec}: {e}") from None


def check_kv_tasks(model: ModelOptions, tasks: list[str]) -> None:
    """SnapKV compresses a prompt before generating: a teacher-forced task has no such prompt."""
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.models.kv_policy import policy_of_flags

    policy = policy_of_flags(model)
    if policy is not None and policy.kind == "snapkv":
        reading = [task for task in tasks if getattr(run_tasks().get(task), "teacher_forced", False)]
        if reading:
            raise ConfigError(f"--kv_cache snapkv compresses a prompt's cache before generation; teacher-forced "
                              f"reads (task {reading[0]}: log-probs of given text) cannot use it: use exact, int8, "
                              f"fp8 or streaming, or run {reading[0]} separately")


def check_kv_policy(model: ModelOptions, config) -> None:
    from jaxeval.models.kv_policy import check_supported, policy_of_flags

    policy = policy_of_flags(model)
    if policy is not None:
        check_supported(policy, config, model.mesh, model.attention)


def check_generation_budget(gen_kwargs_flag, config) -> None:
    """--gen_kwargs' generation budget (the flag's text or mapping) against the model's context."""
    from jaxeval.run.config import parse_gen_kwargs

    gen_kwargs = parse_gen_kwargs(gen_kwargs_flag)
    budget = getattr(gen_kwargs, "max_new_tokens", None) if gen_kwargs is not None else None
    if budget is not None and budget >= config.context_limit:
        raise ConfigError(f"--gen_kwargs: max_gen_toks={budget} leaves no room for a prompt in the model's "
                          f"context of {config.context_limit} tokens ({config.context_source})")


def check_run_flags(flags: RunFlags, tasks: list[str]) -> None:
    """The checks that need no model: part of suite.check_run (run, validate and plan)."""
    check_seed(flags.run.seed)
    check_quant_group(flags.model)
    check_kv_tasks(flags.model, tasks)


def check_model_flags(model: ModelOptions, gen_kwargs=None, devices: bool = True):
    """Every check above against the model's config (cli._load makes them before load_model reads a
    weight; validate and plan make them too); the ModelConfig. devices False (plan, which may
    estimate for other hardware): --attention and --mesh are not checked against the devices here.
    gen_kwargs: the run's --gen_kwargs, whose generation budget must leave room in the context."""
    from jaxeval.weights.loader import generation_eos_ids, resolve_model_path

    config = model_config(model)
    folder = resolve_model_path(model.model)
    if folder.is_dir():
        generation_eos_ids(folder)  # generation_config.json: an object whose eos ids are token ids
    check_quantization(model, config)
    if devices:
        from jaxeval.weights.loader import default_dtype
        from jaxeval.models.attention import check_attention

        check_attention(model.attention, config, default_dtype() if model.dtype == "auto" else model.dtype)
        check_mesh(model, config)
    check_kv_policy(model, config)
    check_generation_budget(gen_kwargs, config)
    return config
