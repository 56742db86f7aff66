"""The sample loop the framework owns: a benchmark declares its samples, how one is run and scored
and how its task is summarised (a Task); this module does the rest once, for every benchmark.

    class ToyTask(Task):
        def groups(self):                    # the samples, in groups of one config and length
            return [Group("toy", [Sample(f"toy/main/all/{i}/0", i) for i in range(6)])]

        def request(self, sample):           # what the model is asked: Generate, Read or None (no call)
            return Generate(prompt_ids, GenerationOptions(16))

        def score(self, sample, output):     # -> the sample's record (journaled) or Then(next request)
            return {"pred": output.text}

        def summarize(self, done):           # [Done per group] -> (details section, printed table)
            ...

The loop (run_task) does:
- --limit: the first N (or that fraction) of each group's samples (Group.limit=False: the benchmark
  limited at the source, RULER's generated samples);
- the order: Group.bucketed puts the samples of one generation length bucket together, longest
  first, so each journal batch fills one engine batch (records come back in the group's order);
- the journal: map_journaled resumes by Sample.key, shares the samples between hosts and shows
  progress; a record is the JSON round-tripped one, so a resumed run scores the same values;
- batching: a journal batch of --batch_size samples; their generate requests with equal options go
  out in one call (batch_size prompts per engine batch), their reads rows_per_step per step;
- the --log_samples rows: prompt_fields (the prompt's sha256 and tokens, its text with
  --log_samples_prompts) and sample_rows (key, prompt fields, record);
- plan counting: `jaxeval plan` runs the same loop on a counting model (plan/counting.py).

Groups run one after the other as Task.groups() yields them, each handed to Task.finish as it
ends (a task whose groups hold long prompts reduces them there), then Task.summarize gets them all.

Benchmark.run() is the escape hatch where a benchmark's work does not fit one request per sample
(the agent bench's rules configs: prefix-shared reads of every sequence of a session); such a run
still calls run_groups for the samples that do fit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Any, Callable, Sequence

from jaxeval.errors import ConfigError
from jaxeval.generation import GenerationOptions, bucket_order, decoded, generate

# ctx: a jaxeval.benchmarks.base.RunContext (base imports this module: no import back)


@dataclasses.dataclass(frozen=True)
class Sample:
    key: str  # the journal and --log_samples key: "<task>/<config>/<length>/<item id>/<run>"
    item: Any = None  # the benchmark's own (a record, a row, (record, run), ...)


@dataclasses.dataclass(frozen=True)
class Group:
    """Samples that share one --limit, one progress line and one journal batching (a dataset, a
    config at one length)."""

    name: str  # the progress line's description
    samples: Sequence[Sample]
    limit: bool = True  # ctx.limit keeps the first N; False: the benchmark limited at the source
    bucketed: bool = False  # journal batches in generation-bucket order (every request built first)
    unit: str = "item"
    info: Any = None  # the benchmark's own (what summarize needs of the group)


@dataclasses.dataclass(frozen=True)
class Generate:
    prompt: Sequence[int]  # token ids, chat template and cuts applied
    options: GenerationOptions


@dataclasses.dataclass(frozen=True)
class Read:
    ids: Any  # token ids [T]
    positions: Any  # read positions [K]
    tokens: Any  # the target token at each position [K] (or [K, C])


@dataclasses.dataclass(frozen=True)
class Generated:
    text: str  # the new tokens decoded, special tokens skipped, nothing stripped (generation.decoded)
    generation: Any  # the engine's Generation (.tokens, .finish_reason)


@dataclasses.dataclass(frozen=True)
class Then:
    """score()'s answer when a sample needs a second request (LongBench v2's chain of thought):
    the loop sends `request` with the other samples' second requests, then score(output) -> record."""

    request: Generate | Read
    score: Callable[[Any], "dict | Then"]


@dataclasses.dataclass(frozen=True)
class Done:
    group: Group
    samples: list[Sample]  # after --limit, in the group's order
    records: list[dict]  # one per sample
    total: int  # samples before --limit


class Task:
    """One run of one task on the sample loop (Benchmark.samples returns it)."""

    def groups(self) -> Sequence[Group]:
        raise NotImplementedError(f"{type(self).__name__}.groups")

    def request(self, sample: Sample) -> Generate | Read | None:
        """What the model is asked for this sample; None: nothing (score gets output None)."""
        raise NotImplementedError(f"{type(self).__name__}.request")

    def score(self, sample: Sample, output) -> dict | Then:
        """The sample's record (JSON-serialisable, journaled) from the model's Generated / ReadResult."""
        raise NotImplementedError(f"{type(self).__name__}.score")

    def finish(self, done: Done):
        """What summarize needs of a group, right after it ran (default: the Done itself). A task
        whose groups hold long prompts scores them here, so they are let go group by group."""
        return done

    def summarize(self, done: list) -> tuple[dict, str]:
        """[finish(Done) per group] -> (the details section, the table printed after the task)."""
        raise NotImplementedError(f"{type(self).__name__}.summarize")


def check_limit(limit, what: str = "--limit") -> None:
    """A ConfigError unless limit is None, an integer >= 1 or a fraction 0 < limit < 1."""
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        return
    if isinstance(limit, float) and 0.0 < limit < 1.0:
        return
    raise ConfigError(f"{what} must be a positive integer or a fraction between 0 and 1, got {limit!r}")


def limit_count(total: int, limit) -> int:
    """How many of `total` items --limit keeps: all (None), the first N, or with 0 < limit < 1 that
    share rounded up, as lm-eval does (int(math.ceil(total * limit)))."""
    check_limit(limit, "limit")
    if limit is None:
        return total
    return min(total, int(math.ceil(total * limit)) if isinstance(limit, float) else limit)


def limited(items: Sequence, limit) -> list:
    """The first limit_count(len(items), limit) items."""
    return list(items)[:limit_count(len(items), limit)]


def prompt_fields(text: str, tokens: int, with_text: bool = False) -> dict:
    """A sample's prompt in the --log_samples rows: the sha256 of its text (UTF-8), its length in
    tokens, and with --log_samples_prompts the text itself."""
    fields = {"prompt_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "prompt_tokens": tokens}
    return {**fields, "prompt": text} if with_text else fields


def prompt_text(tokenizer, ids) -> str:
    """The text of prompt ids as the model got them (special tokens kept: the chat template's too)."""
    return tokenizer.decode(list(ids), skip_special_tokens=False)


def read_rows(ctx) -> int:
    """Sequences read per step: ctx.read_rows where given, else --batch_size on an accelerator and one
    on CPU (jaxeval.engine.batch_read.rows_per_step)."""
    from jaxeval.engine.batch_read import rows_per_step

    if ctx.read_rows is not None:
        return ctx.read_rows
    return rows_per_step(ctx.batch_size)


def run_task(ctx, task: Task) -> tuple[dict, str]:
    """Every group of the task through the loop, one after the other as task.groups() yields them
    (a task loads and checks all its data before, so bad data stops the run before the first
    model call), each finished as it ends, then the task's summary."""
    return task.summarize([task.finish(_run_group(ctx, task, group)) for group in task.groups()])


def run_groups(ctx, task: Task, groups: Sequence[Group]) -> list[Done]:
    return [_run_group(ctx, task, group) for group in groups]


def _run_group(ctx, task: Task, group: Group) -> Done:
    from jaxeval.run.resumable import map_journaled

    samples = limited(group.samples, ctx.limit) if group.limit else list(group.samples)
    if not samples:  # nothing to ask (RULER: a length past the window); no progress line
        return Done(group, [], [], len(group.samples))
    built: dict[int, Generate | Read | None] = {}  # requests built for the order, until their batch runs
    order = list(range(len(samples)))
    if group.bucketed and samples:
        built = {i: task.request(samples[i]) for i in order}
        order = bucket_order([len(built[i].prompt) for i in order], built[0].options.max_new_tokens)

    def compute(batch: list[int]) -> list[dict]:
        chosen = [order[j] for j in batch]
        requests = [built.pop(i) if i in built else task.request(samples[i]) for i in chosen]
        return _compute(ctx, task, [samples[i] for i in chosen], requests)

    records = map_journaled(ctx.journal, [samples[i].key for i in order], compute, batch_size=ctx.batch_size,
                            desc=group.name, unit=group.unit)
    by_sample: list[dict] = [{}] * len(samples)
    for i, record in zip(order, records):
        by_sample[i] = record
    return Done(group, samples, by_sample, len(group.samples))


def _compute(ctx, task: Task, samples: list[Sample], requests: list) -> list[dict]:
    """The records of one journal batch: its requests sent together, each sample scored, and the
    second requests of those that asked for one sent together in turn."""
    scorers: list[Callable] = [lambda output, sample=sample: task.score(sample, output) for sample in samples]
    records: list[dict | None] = [None] * len(samples)
    pending = dict(enumerate(requests))
    while pending:
        outputs = answer(ctx, pending)
        following = {}
        for n in pending:
            scored = scorers[n](outputs[n])
            if isinstance(scored, Then):
                scorers[n], following[n] = scored.score, scored.request
            else:
                records[n] = scored
        pending = following
    return records


def answer(ctx, requests: dict[int, Generate | Read | None]) -> dict[int, Any]:
    """The model's answer to every request (None for None): generations of equal options in one
    call, in the order they first appear; reads read_rows(ctx) per step."""
    model, out = ctx.model, {}
    by_options: dict[GenerationOptions, list[int]] = {}
    reads = []
    for n, request in requests.items():
        if isinstance(request, Generate):
            by_options.setdefault(request.options, []).append(n)
        elif isinstance(request, Read):
            reads.append(n)
        elif request is None:
            out[n] = None
        else:
            raise TypeError(f"a sample's request must be Generate, Read or None, got {type(request).__name__}")
    for options, members in by_options.items():
        generations = generate(model, [requests[n].prompt for n in members], options, batch_size=ctx.batch_size,
                               what="the model")
        for n, generation in zip(members, generations):
            out[n] = Generated(decoded(model.tokenizer, generation), generation)
    if reads:
        rows = read_rows(ctx)
        triples = [(requests[n].ids, requests[n].positions, requests[n].tokens) for n in reads]
        # the model contract's one read entry (jaxeval.engine.backend.LanguageModel); each sample is its own text
        results = model.read_many(triples, batch_size=rows, share_prefixes=False).results
        out.update(zip(reads, results))
    return out


def sample_rows(ctx, task: Task, done: Done) -> list[dict]:
    """A group's --log_samples rows: the key, the prompt (prompt_fields: its sha256 and tokens, the
    text too with --log_samples_prompts; the request is built again for a resumed sample) and the
    record."""
    rows = []
    for sample, record in zip(done.samples, done.records):
        request = task.request(sample)
        ids = request.prompt if isinstance(request, Generate) else request.ids if isinstance(request, Read) else None
        prompt = {} if ids is None else prompt_fields(prompt_text(ctx.model.tokenizer, ids), len(ids), ctx.log_prompts)
        rows.append({"key": sample.key, **prompt, **record})
    return rows
