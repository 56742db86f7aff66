"""A plan without the benchmark's data: its requests built from the item counts and prompt
lengths the benchmark itself defines (HELMET's configs, LongBench's card), for a user who wants the
estimate before downloading the data. Every such task is named in the plan as estimated from
counts, with the reason the data was not read and where its counts come from."""

from __future__ import annotations

from jaxeval.benchmarks.base import PlannedTask, limit_count


def record_planned(task: PlannedTask, model, limit, batch_size: int, judge_label: str = "judge") -> dict:
    """Fill model.recorder with the task's generation batches and judge calls (as the counting
    model records a real run's) and return its n-samples. A prompt longer than the model's window
    less the generation budget is cut to it, as the benchmarks' truncation does."""
    from jaxeval.plan.counting import record_generation

    window = model.max_length
    n_samples = {}
    for unit in task.units:
        n = limit_count(unit.items, limit)
        n_samples[unit.leaf] = {"original": unit.items, "effective": n}
        if n == 0:
            continue
        prompt = max(1, min(unit.prompt_tokens, window - unit.max_new_tokens))
        record_generation(model.recorder, [prompt] * n, unit.max_new_tokens, batch_size)
        for _ in range(n):
            model.recorder.judge_calls += [(judge_label, tokens, unit.judge_reply_tokens)
                                           for tokens in unit.judge_prompts]
    return n_samples


def missing_data_note(task: str, error: Exception, planned: PlannedTask) -> str:
    return (f"{task}: estimated from the benchmark's item counts and prompt lengths ({planned.source}), "
            f"not from the data ({error})")
