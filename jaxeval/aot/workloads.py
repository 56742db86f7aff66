"""What a compile covers: the reads and generations of a run, as workloads of (tokens, rows, read
positions, new tokens). From --lengths: one read (and with --new_tokens one generation) per length.
From --tasks: the run's own requests, counted by `jaxeval plan`'s counting pass (each task's
Benchmark.run on a model that records instead of computing; from the data when it is here, else
from the benchmark's planned_units), grouped by the programs they dispatch: a read per length
bucket and LM-head row bucket, a generation per batch rows and cache bucket."""

from __future__ import annotations

import dataclasses

from jaxeval.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Workload:
    tokens: int  # a read's input tokens, or a generation's prompt tokens (the longest of its group)
    rows: int  # sequences read, or prompts decoded, together
    read_positions: int  # LM-head rows per sequence (reads)
    new_tokens: int = 0  # > 0: also a generation (the prompt's prefill and the decode step)
    read: bool = True  # the read's programs (prefill chunk, gather, head)
    tasks: tuple[str, ...] = ()  # the tasks that need it (--tasks)

    def at(self, rows: int) -> "Workload":
        return dataclasses.replace(self, rows=rows)


def from_lengths(lengths: list[int], rows: int, read_positions: int, new_tokens: int) -> list[Workload]:
    return [Workload(n, rows, read_positions, new_tokens) for n in lengths]


def largest(workloads: list[Workload]) -> list[Workload]:
    """The workloads whose programs hold the most per row: the longest read and the generation with
    the longest cache (a batch that fits them fits the rest)."""
    reads = [w for w in workloads if w.read]
    generations = [w for w in workloads if w.new_tokens]
    out = [max(reads, key=lambda w: w.tokens)] if reads else []
    if generations:
        out.append(max(generations, key=lambda w: w.tokens + w.new_tokens))
    return out


def from_tasks(values: dict, tasks: list[str], config, rows: int) -> tuple[list[Workload], dict]:
    """The workloads of running `tasks` at batch size `rows` -> (workloads, what was counted: per task
    its requests and whether they come from the data or the benchmark's planned counts)."""
    from jaxeval.engine.buckets import count_bucket, length_bucket
    from jaxeval.engine.generate import batch_bucket
    from jaxeval.plan.command import count_tasks

    counting = _counting_args(values, tasks, rows)
    model = _counting_model(counting, config)
    estimated: dict[str, str] = {}
    counted = count_tasks(counting, tasks, model, estimated)
    reads: dict[tuple[int, int], list] = {}
    generations: dict[tuple[int, int], list] = {}
    summary = {}
    for task, (recorder, _) in counted.items():
        segments = [s for s in recorder.reads if s.end]
        for s in segments:
            group = reads.setdefault((length_bucket(s.end), count_bucket(max(1, s.rows))), [0, set()])
            group[0] = max(group[0], s.end)
            group[1].add(task)
        for b in recorder.batches:  # the programs: the prompt's prefill at its bucket, the step at the cache's
            prompt = max(b.prompts)
            key = (batch_bucket(len(b.prompts)), b.cache_len, length_bucket(prompt))
            group = generations.setdefault(key, [(0, 0), set()])
            group[0] = max(group[0], (prompt, b.max_new_tokens))  # one real batch's pair: its cache is the key's
            group[1].add(task)
        summary[task] = {"reads": len(segments), "generation_batches": len(recorder.batches),
                         "source": estimated.get(task, "the task's data")}
    longest = {}  # per length bucket: its longest read (one prefill program per bucket, whatever the head rows)
    for (bucket, _), (tokens, _) in reads.items():
        longest[bucket] = max(longest.get(bucket, 0), tokens)
    out = [Workload(longest[bucket], rows, k, tasks=tuple(sorted(names)))
           for (bucket, k), (_, names) in sorted(reads.items())]
    out += [Workload(prompt, batch_rows, 1, new, read=False, tasks=tuple(sorted(names)))
            for (batch_rows, _, _), ((prompt, new), names) in sorted(generations.items())]
    if not out:
        raise ConfigError(f"compile: --tasks {','.join(tasks)} make no read or generation request (nothing to compile)")
    if model.tokenizer_proxy:
        summary["tokenizer_proxy"] = model.tokenizer_proxy
    return out, summary


def _counting_args(given: dict, tasks: list[str], rows: int):
    """The typed flags the counting pass reads (jaxeval.options.flags.RunFlags: the benchmarks' settings,
    --limit, --seed, --gen_kwargs) at batch size `rows`; nothing is written (no output folder is made)."""
    from jaxeval.options.flags import RunFlags

    values = dict(given) | {"tasks": ",".join(tasks), "batch_size": rows, "out": None,
                           "output_path": given.get("output_path") or "results"}
    values.setdefault("limit", None)
    values.setdefault("seed", 0)
    return RunFlags.of(values)


def _counting_model(flags, config):
    """The counting model of --model: a named shape counts with the embedded tokenizer (said so), a
    folder as `jaxeval plan` counts it (its tokenizer, or the embedded one for a config.json alone)."""
    from jaxeval.aot.shapes import named_config

    model_name = str(flags.model.model)
    if named_config(model_name) is None:
        from jaxeval.plan.command import counting_model

        return counting_model(flags.model)[0]
    from jaxeval.embedded import EMBEDDED_MODEL
    from jaxeval.plan.counting import CountingModel
    from jaxeval.weights.loader import load_tokenizer_from

    model = CountingModel(config, load_tokenizer_from(EMBEDDED_MODEL), model_name, (), flags.model.prefill_chunk)
    model.tokenizer_proxy = (f"{model_name} is a named shape (no tokenizer): tokens counted with the embedded "
                             "model's Llama tokenizer as a proxy")
    return model
