"""Which benchmarks the CLI knows: one `cli` module per benchmark package.

Each module listed in CLI_MODULES may define
  TASKS: dict[str, Callable[[Model, argparse.Namespace], tuple[dict, str]]]
      `jaxeval run --tasks NAME` calls TASKS[NAME](model, args) -> (result section, printed table);
  add_run_arguments(parser): its own `jaxeval run` flags (prefix them with the benchmark's name
      unless they are the ecosystem's shared flags);
      The task reads `getattr(args, "journal", None)`: None, or an object with get(key) -> dict | None
      and put(key, record) (jaxeval/results/journal.py); jaxeval.results.resumable.map_journaled
      is the loop that resumes, splits work between hosts and shows progress. A `sample_log` list in
      the result (dicts with a "key") goes to the --log_samples JSONL, not the results file;
  add_score_arguments(parser) and cmd_score(args) -> exit code:
      `jaxeval score --benchmark SCORE_NAME ...` (SCORE_NAME defaults to the package name).
Optional hooks (a benchmark without them still runs; see docs/results_schema.md):
  describe() -> {task: {"about": str, "configs": [...], "lengths": [...]}}    for `jaxeval ls`;
  check(task, args): raise a JaxevalError for any of the task's flags its run would reject; called
      before anything is loaded by `jaxeval run` and `jaxeval validate` alike;
  check_chat_template(task, args, has_template): raise a JaxevalError when the task needs the
      model's chat template and it has none (called after the model loads, before any compute;
      `jaxeval validate` calls it from the model folder's files);
  validate(task, args) -> [str]: load and check the task's data as `jaxeval run` would, raising a
      JaxevalError naming file, record and field, returning one line per check   `jaxeval validate`;
  summarize(task, result) -> dict of results-JSON sections (results, groups, headline,
      higher_is_better, n-samples, lengths, configs, versions, truncation, deviations, judge,
      chat_template) for the run's results file.
Adding a benchmark is one line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

CLI_MODULES = (
    "jaxeval.benchmarks.agent_bench.cli",
    "jaxeval.benchmarks.longbench.cli",
    "jaxeval.benchmarks.longbench_pro.cli",
    "jaxeval.benchmarks.helmet.cli",
)


def cli_modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in CLI_MODULES]


def run_tasks() -> dict:
    """Task name -> callable(model, args) -> (result, table), over every benchmark."""
    tasks = {}
    for module in cli_modules():
        tasks.update(getattr(module, "TASKS", {}))
    return tasks


def scorers() -> dict[str, ModuleType]:
    """`jaxeval score --benchmark` name -> the benchmark's cli module."""
    return {getattr(m, "SCORE_NAME", m.__name__.split(".")[-2]): m for m in cli_modules()
            if hasattr(m, "cmd_score")}


def task_hook(task: str, hook: str):
    """The `hook` function of the module that provides `task`, or None when it has none."""
    for module in cli_modules():
        if task in getattr(module, "TASKS", {}):
            return getattr(module, hook, None)
    return None


def descriptions() -> dict[str, dict]:
    """Task -> describe() entry; tasks of modules without describe() get an empty entry."""
    described = {task: {} for task in run_tasks()}
    for module in cli_modules():
        if hasattr(module, "describe"):
            described.update(module.describe())
    return described
