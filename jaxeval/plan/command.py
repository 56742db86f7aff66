"""`jaxeval plan <jaxeval run flags>`: the run's items, tokens, FLOPs, memory, time and judge
cost, from the model's config and tokenizer (no weights on the device, unless --calibrate model)."""

from __future__ import annotations

import contextlib
import math
import os
import sys

from collections.abc import Mapping

from jaxeval.errors import ConfigError
from jaxeval.options.flags import RunFlags
from jaxeval.options.model import ModelOptions
from jaxeval.plan import cost
from jaxeval.plan.options import check_plan_arguments, judge_price

def counting_model(options: ModelOptions):
    """The CountingModel of --model: config (with --model_args overrides), tokenizer, EOS ids."""
    from jaxeval.weights.loader import generation_eos_ids, load_tokenizer_from, resolve_model_path
    from jaxeval.weights.maxtext import maxtext_model_info
    from jaxeval.io.inputs import check_model_folder
    from jaxeval.models.config import check_overrides, config_from_hf, load_hf_config
    from jaxeval.weights.gguf_weights import GGUFCheckpoint, gguf_file, load_gguf_tokenizer
    from jaxeval.plan.counting import CountingModel

    overrides = check_overrides(options.config_overrides or {}, "plan")
    maxtext = maxtext_model_info(options, overrides)
    if maxtext:  # a MaxText checkpoint: its config and tokenizer, no array read
        return CountingModel(*maxtext, str(options.model), (), options.prefill_chunk), None
    folder = resolve_model_path(options.model)
    check_model_folder(folder)
    gguf = gguf_file(folder)
    if gguf:
        config = config_from_hf(GGUFCheckpoint(gguf).config, where=str(gguf), overrides=overrides)
        tokenizer = load_gguf_tokenizer(gguf)
    else:
        config, tokenizer = load_hf_config(folder, overrides), load_tokenizer_from(folder)
    proxy = None
    if tokenizer is None:  # a config.json alone (before downloading the weights): counts with a stand-in
        from jaxeval.embedded import EMBEDDED_MODEL

        tokenizer, proxy = load_tokenizer_from(EMBEDDED_MODEL), (
            f"{folder} has no tokenizer: tokens counted with the embedded model's Llama tokenizer as a proxy "
            "(counts approximate; add the tokenizer files for exact ones)")
    model = CountingModel(config, tokenizer, str(options.model), generation_eos_ids(folder), options.prefill_chunk)
    model.tokenizer_proxy = proxy
    return model, gguf


@contextlib.contextmanager
def _quiet_progress():
    old = os.environ.get("JAXEVAL_PROGRESS")
    os.environ["JAXEVAL_PROGRESS"] = "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JAXEVAL_PROGRESS", None)
        else:
            os.environ["JAXEVAL_PROGRESS"] = old


def count_tasks(flags: RunFlags, tasks: list[str], model, estimated_from_counts: dict | None = None) -> dict:
    """Run every task's own Benchmark.run on the counting model -> task -> (recorder, n-samples);
    settings that cannot change a number (output files) are left at their defaults. A task whose
    data is not here is counted from its benchmark's own counts (plan/from_counts.py), its note
    put in estimated_from_counts."""
    import dataclasses

    from jaxeval.errors import DataError
    from jaxeval.plan.counting import CountingJudge, Recorder
    from jaxeval.plan.from_counts import missing_data_note, record_planned
    from jaxeval.tasks import each_task, run_context

    from jaxeval.generation import overriding
    from jaxeval.run.config import parse_gen_kwargs

    counted, gen_kwargs = {}, parse_gen_kwargs(flags.run.gen_kwargs)
    estimated_from_counts = {} if estimated_from_counts is None else estimated_from_counts
    for task, benchmark, settings in each_task(flags, tasks):
        unhashed = {f.name: f.default for f in dataclasses.fields(settings) if not f.metadata.get("hashed", True)}
        settings = dataclasses.replace(settings, **unhashed)
        model.recorder = recorder = Recorder()

        def wrap(judge, label, recorder=recorder):
            return None if judge is None else CountingJudge(judge, label, model.tokenizer, recorder)

        ctx = dataclasses.replace(run_context(flags, task, model, None), judge_wrapper=wrap)
        try:
            with _quiet_progress(), contextlib.redirect_stdout(sys.stderr), overriding(gen_kwargs):
                result, _ = benchmark.run(ctx, settings)  # --gen_kwargs' budget counts, as in the run
        except DataError as error:  # no data here: the benchmark's own counts, said so, or the error
            planned = benchmark.planned_units(task, settings, model.tokenizer)
            if planned is None:
                raise
            model.recorder = recorder = Recorder()
            counted[task] = (recorder, record_planned(planned, model, flags.run.limit, flags.run.batch_size))
            estimated_from_counts[task] = missing_data_note(task, error, planned)
            continue
        summary = benchmark.summarize(task, result) or {}
        counted[task] = (recorder, summary.get("n-samples", {}))
    return counted


def hardware_rates(plan_flags: Mapping, config, dtype: str, loaded_model=None, read_tokens: int = 512) -> dict:
    """The rates the time estimate uses (hardware.py): a named accelerator, the detected one, a
    measured matmul peak, or a calibration of the loaded model."""
    from jaxeval.plan import hardware
    from jaxeval.plan.estimate import accelerator_hardware

    mode = plan_flags.get("calibrate", "auto")
    mfu, mbu = plan_flags.get("mfu"), plan_flags.get("mbu")
    extra = {"config": config, "dtype": dtype}
    if plan_flags.get("accelerator"):
        return accelerator_hardware(plan_flags["accelerator"], mfu, mbu) | extra
    kind, name = hardware.detected()
    if mode == "none":
        return {"source": f"{kind}, not calibrated", "flops_per_s": None} | extra
    if mode == "model":
        if loaded_model is None:
            raise ConfigError("--calibrate model needs the model's weights loaded")
        m = hardware.measure_model(loaded_model, read_tokens)
        flops = cost.segment_flops(config, 0, read_tokens, 1)
        return {"source": f"{kind}: measured reads of the model ({read_tokens} tokens: {m['read_s']:.4f} s, "
                          f"compile {m['read_first_s'] - m['read_s']:.2f} s; decode step {m['decode_step_s']:.4f} s)",
                "flops_per_s": flops / m["read_s"], "mfu": 1.0, "decode_step_s": m["decode_step_s"],
                "compile_s": max(0.0, m["read_first_s"] - m["read_s"]), "calibration": m} | extra
    if name is not None and mode == "auto":
        return accelerator_hardware(name, mfu, mbu) | {"source": f"detected {kind} ({name})"} | extra
    peak = hardware.matmul_peak()
    return {"source": f"{kind}: measured float32 matmul peak {peak / 1e9:.1f} GFLOP/s at MFU {mfu}",
            "flops_per_s": peak, "mfu": mfu, "mbu": mbu} | extra


def memory_inputs(options: ModelOptions, config, gguf) -> tuple[str, dict, int]:
    """(the run's dtype, its mesh shape, the weights' bytes as stored) for the memory estimate."""
    from jaxeval.weights.loader import default_dtype
    from jaxeval.models.mesh import AXES, auto_mesh_shape, parse_mesh_spec

    dtype = default_dtype() if options.dtype == "auto" else options.dtype
    mesh_arg = options.mesh
    if mesh_arg == "auto":
        import jax
        mesh = auto_mesh_shape(jax.device_count(), config.num_heads, config.num_kv_heads,
                               context_parallel=config.linear_attention is None)  # hybrids: no context axis
    else:
        mesh = parse_mesh_spec(mesh_arg) if mesh_arg else dict.fromkeys(AXES, 1)
    quantize = None if options.quantize in (None, "none") else options.quantize
    keep_blocks = gguf if (gguf is not None and not options.dequantize) else None  # mesh too
    return dtype, mesh, cost.weight_bytes(config, dtype, quantize, options.quant_group, keep_blocks)


def build_plan(flags: RunFlags, tasks: list[str], loaded_model=None) -> dict:
    """The plan of `jaxeval run` with these flags (check_run's checks first)."""
    from jaxeval.plan import estimate
    from jaxeval.plan.hardware import device_memory_bytes

    check_plan_arguments(flags.extra)
    model, gguf = counting_model(flags.model)
    config = model.config
    from_counts: dict[str, str] = {}
    counted = count_tasks(flags, tasks, model, from_counts)
    dtype, mesh, weights = memory_inputs(flags.model, config, gguf)
    chips = math.prod(mesh.values())
    per_task, totals = estimate.tokens_section(config, counted)
    reads = [s for recorder, _ in counted.values() for s in recorder.reads if s.rows]
    typical = sorted(s.end for s in reads)[len(reads) // 2] if reads else 256
    rates = hardware_rates(flags.extra, config, dtype, loaded_model, read_tokens=min(typical, 8192))
    rates["chip_price"] = flags.flag("chip_price")
    device_bytes = rates.get("device_memory_bytes") or device_memory_bytes()
    memory = estimate.memory_section(config, counted, weights, dtype, mesh, device_bytes, _current_rss(),
                                     on_cpu=hardware_platform() == "cpu")
    try:
        time_estimate = estimate.time_section(counted, totals, memory, rates, chips)
    except ConfigError as e:  # no FLOP count for the model's layer types
        time_estimate = {"wall_time_s": None, "note": str(e)}
    items = {leaf: n.get("effective") for recorder, n_samples in counted.values() for leaf, n in n_samples.items()}
    hardware_out = {k: v for k, v in rates.items() if k not in ("config", "dtype", "chip_price")}
    return {"model": str(flags.model.model), "tokenizer_proxy": model.tokenizer_proxy, "estimated_from_counts": from_counts,
            "dtype": dtype, "tasks": list(tasks), "limit": flags.run.limit,
            "batch_size": flags.run.batch_size, "items": items, "tokens": per_task, "totals": totals,
            "memory": memory, "hardware": hardware_out, "time": time_estimate,
            "judge": estimate.judge_section(counted, judge_price(flags.flag("judge_price")))}


def _current_rss() -> int:
    """This process's resident memory now (bytes), from /proc; 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def hardware_platform() -> str:
    import jax

    return jax.default_backend()


def estimated(plan: dict) -> dict:
    """The plan's headline numbers, as `jaxeval run` records them in plan.estimated."""
    t, m = plan["totals"], plan["memory"]
    return {"tokens_read": t["tokens_read"], "prompt_tokens": t["prompt_tokens"],
            "generated_tokens_max": t["generated_tokens_max"], "flops": t["flops"],
            "wall_time_s": plan["time"].get("wall_time_s"), "device_bytes_per_chip": m["device_bytes_per_chip"],
            "host_bytes": m["host_bytes"], "judge_calls": plan["judge"]["calls"],
            "judge_price_usd_max": plan["judge"]["price_usd_max"], "hardware": plan["hardware"]["source"]}


def run_plan(flags: RunFlags, tasks: list[str], loaded_model=None) -> int:
    """Print (and with --plan_json write) the plan of `jaxeval run` over tasks; the CLI checked the run."""
    import json

    plan = build_plan(flags, tasks, loaded_model)
    print(estimate_table(plan))
    text = json.dumps(plan, indent=2, default=float)
    if flags.flag("plan_json"):
        from jaxeval.io.fs import write_text_atomic
        print(f"wrote {write_text_atomic(flags.flag('plan_json'), text + chr(10))}")
    else:
        print(text)
    return 0


def estimate_table(plan: dict) -> str:
    from jaxeval.plan.estimate import format_table

    return format_table(plan)
