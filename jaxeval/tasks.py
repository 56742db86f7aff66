"""The tasks of a run: each with its benchmark and settings, and the RunContext its runner gets.

Shared by `jaxeval run` (jaxeval/suite.py) and `jaxeval plan` (jaxeval/plan/), which runs the same
tasks on a counting model.
"""

from __future__ import annotations

from jaxeval.options.flags import RunFlags


def run_context(flags: RunFlags, task: str, model=None, journal=None):
    """What a task's runner gets besides its own settings (jaxeval.benchmarks.base.RunContext)."""
    from jaxeval.benchmarks.base import JudgeCalls, RunContext
    from jaxeval.judges.options import DEFAULTS
    from jaxeval.run.config import output_folder

    judge = JudgeCalls(*(flags.flag(name, DEFAULTS[name]) for name in ("judge_timeout", "judge_retries",
                                                                      "judge_max_failures")))
    run = flags.run
    return RunContext(task=task, model=model, journal=journal, limit=run.limit, batch_size=run.batch_size,
                      seed=run.seed, model_path=str(flags.model.model), output_folder=output_folder(run), judge=judge,
                      log_prompts=bool(run.log_samples_prompts))


def each_task(flags: RunFlags, tasks: list[str]):
    """(task, its benchmark, the benchmark's settings) of every task, in order."""
    from jaxeval.benchmarks.registry import run_tasks

    available = run_tasks()
    for task in tasks:
        benchmark = available[task]
        yield task, benchmark, benchmark.settings(flags.extra)
