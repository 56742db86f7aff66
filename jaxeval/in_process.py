"""jaxeval.evaluate: the tasks of `jaxeval run` on live parameters, from inside a training loop.

    results = jaxeval.evaluate(params=model.params(), config=hf_config, tokenizer=tok,
                               tasks="agent_bench", limit=2, step=step)

The parameters are the caller's arrays, used where they are: nothing is copied to the host, and
arrays already laid out as jaxeval's sharding rules would lay them on the mesh are not moved
(others are re-sharded device to device, and counted in results["live"]["resharded"]). The
engine's jitted steps take the parameters as arguments, so a second call with arrays of the same
shapes, dtypes and shardings compiles nothing new (results["timing"]["compiles"] says so).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path

from jaxeval.errors import ConfigError


def evaluate(params, config, tokenizer, tasks="agent_bench", limit=None, *, step: int | None = None,
             mapping=None, mesh=None, dtype: str | None = None, attention: str = "chunked",
             prefill_chunk: int = 2048, batch_size: int = 1, seed: int = 0, output_path: str | None = None,
             name: str = "live", flags: dict | None = None, show_tables: bool = False) -> dict:
    """Run `tasks` on live parameters -> the results dict `jaxeval run` writes (docs/results_schema.md),
    with results["step"] and results["live"] added.

    params: jaxeval's parameter tree (jaxeval.models.param_layout; Decoder.params(), an nnx.State or
    a Decoder), or with mapping= any tree a mapping reads (jaxeval.weights.mapping: a file, a dict or
    a built-in's name). config: a ModelConfig, a Hugging Face config dict, or a folder / config.json.
    tokenizer: a transformers tokenizer or a folder holding one. tasks: a name or a list of them, as
    --tasks; limit: as --limit. mesh: a jaxeval mesh (jaxeval.models.mesh) or None: the mesh the
    arrays are on when it has jaxeval's axes, else one device (arrays on several devices of another
    mesh are re-sharded onto a jaxeval mesh of the same devices). dtype: the parameters' dtype
    (default: theirs). flags: any other `jaxeval run` flag, {"agent_bench_sets": "facts"}.
    output_path: where the journal and one results file per step are kept, so a restarted training
    job's evaluation of a step it already scored is read back, not recomputed (step is then needed);
    None: a temporary folder, nothing kept.
    """
    from jaxeval.api import Model, build_module, load_tokenizer_from
    from jaxeval.engine.runtime import Runtime
    from jaxeval.suite import check_run, open_journal, task_results, _check_chat_template, _lock_run
    from jaxeval.run.multihost import process_shard
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.run.config import config_hash, not_hashed_keys, recorded_config, run_name
    from jaxeval.judges.chat import has_chat_template
    from jaxeval.weights.live import live_config, placed_params

    t0 = time.perf_counter()
    if output_path is not None and step is None:
        raise ConfigError("evaluate: output_path keeps results per training step, so step= is needed with it")
    config = live_config(config)
    tokenizer = load_tokenizer_from(Path(tokenizer)) if isinstance(tokenizer, (str, Path)) else tokenizer
    if tokenizer is None:
        raise ConfigError("evaluate: tokenizer= is needed (the benchmarks tokenize their texts)")
    params, mesh, dtype, resharded = placed_params(params, config, mesh=mesh, dtype=dtype, mapping=mapping)
    task_list = [tasks] if isinstance(tasks, str) else list(tasks)
    label = name if step is None else f"{name}-step{step}"
    with tempfile.TemporaryDirectory(prefix="jaxeval-live-") as scratch:
        run_flags = live_run_flags(task_list, limit, label, output_path or scratch, flags, dtype=dtype,
                                   attention=attention, prefill_chunk=prefill_chunk, batch_size=batch_size, seed=seed)
        check_run(run_flags, task_list)
        module = build_module(config, params, dtype)
        model = Model(module=module, tokenizer=tokenizer, path=label, dtype=dtype,
                      fingerprint=live_fingerprint(config, dtype, step),
                      runtime=Runtime(attention=attention, prefill_chunk=prefill_chunk, dtype=dtype, mesh=mesh))
        _check_chat_template(run_flags, task_list, has_chat_template(tokenizer))
        recorded = recorded_config(run_flags, task_list, run_tasks())
        hash_ = config_hash(recorded, not_hashed_keys(run_flags, task_list, run_tasks()))
        shard = process_shard()
        lock = _lock_run(run_flags.run, run_name(label, task_list, hash_), shard)
        try:
            journal = open_journal(run_flags, model, task_list, hash_, run_name(label, task_list, hash_, model.fingerprint),
                                   shard)
            results, _ = task_results(run_flags, task_list, model, journal, recorded, hash_,
                                      run_name(label, task_list, hash_, model.fingerprint), t0, show_tables)
        finally:
            lock.release()
        if output_path is None:
            results["journal"] = None  # it lived in the temporary folder
    results["step"] = step
    results["live"] = {"resharded": resharded, "mesh": None if mesh is None else dict(mesh.shape)}
    if output_path is not None:
        from jaxeval.engine.distributed import is_writer
        from jaxeval.io.json_files import write_json_atomic
        from jaxeval.run.config import results_path

        if is_writer():
            write_json_atomic(results_path(run_flags.run, results["run_name"]), results)
    return results


def live_run_flags(tasks: list[str], limit, model_label: str, output_path: str, flags: dict | None,
                   **model_flags):
    """The RunFlags of these settings, as `jaxeval run` would read them from its flags (every other flag,
    each benchmark's settings among them, at its default unless flags names it)."""
    from jaxeval.run_flags import run_flags_of

    return run_flags_of({"tasks": ",".join(tasks), "model": model_label, "output_path": str(output_path),
                         "limit": limit, **model_flags, **(flags or {})})


def live_fingerprint(config, dtype: str, step: int | None) -> str:
    """What names live parameters in the journal: the config, the dtype and the training step (their
    bytes are not hashed: that would copy them to the host)."""
    text = f"live:{config!r}:{dtype}:{step}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]
