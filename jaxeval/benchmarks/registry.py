"""Which benchmarks the CLI knows: one `cli` module per benchmark package.

Each module listed in CLI_MODULES may define
  TASKS: dict[str, Callable[[Model, argparse.Namespace], tuple[dict, str]]]
      `jaxeval run --tasks NAME` calls TASKS[NAME](model, args) -> (result section, printed table);
  add_run_arguments(parser): its own `jaxeval run` flags (prefix them with the benchmark's name
      unless they are the ecosystem's shared flags);
  add_score_arguments(parser) and cmd_score(args) -> exit code:
      `jaxeval score --benchmark SCORE_NAME ...` (SCORE_NAME defaults to the package name).
Adding a benchmark is one line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

CLI_MODULES = (
    "jaxeval.benchmarks.agent_bench.cli",
    "jaxeval.benchmarks.longbench.cli",
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
