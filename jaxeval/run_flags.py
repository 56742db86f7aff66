"""The flags of `jaxeval run`, validate and plan (lm-eval's names), and the RunFlags they give.

One parser shape serves the command line (jaxeval/cli.py) and `jaxeval.evaluate`
(jaxeval/in_process.py): the shared ModelOptions and RunOptions, the judges', --reference's and
the plan's flags, and every benchmark's Settings as --<benchmark>_<field>.
"""

from __future__ import annotations

import argparse

from jaxeval.embedded import EMBEDDED_MODEL
from jaxeval.errors import ConfigError
from jaxeval.options.flags import RunFlags
from jaxeval.options.model import add_model_arguments
from jaxeval.options.run import RunOptions
from jaxeval.options.settings import add_flags

NOT_FLAGS = ("func", "parser")  # what a command's parser sets beside its flags


def add_run_arguments(p: argparse.ArgumentParser, benchmarks) -> None:
    """The flags of `jaxeval run` (lm-eval's names) and every benchmark's own."""
    from jaxeval.judges.options import add_judge_arguments
    from jaxeval.plan.options import add_plan_arguments
    from jaxeval.report.build import add_reference_arguments

    add_model_arguments(p, str(EMBEDDED_MODEL))
    add_flags(p, RunOptions)
    add_judge_arguments(p)  # any benchmark's judges
    add_reference_arguments(p, run=True)  # --reference ORIGINAL: the paired comparison beside the results
    add_plan_arguments(p)  # the estimate `jaxeval plan` prints and `jaxeval run` records
    for benchmark in benchmarks:  # each benchmark's Settings: --<benchmark>_<field>
        benchmark.add_arguments(p)


def run_flags(args: argparse.Namespace) -> RunFlags:
    """A parsed run / validate / plan command line as the typed RunFlags everything below takes, with
    --model_args applied to the model options."""
    from jaxeval.run.config import apply_model_args

    return apply_model_args(RunFlags.of({key: value for key, value in vars(args).items() if key not in NOT_FLAGS}))


def run_flags_of(values: dict, where: str = "evaluate") -> RunFlags:
    """The RunFlags of {flag: value} (jaxeval.evaluate's settings), each read as its flag reads it and every
    flag not given at its default, so the tasks see exactly what the command line would give them."""
    from jaxeval.benchmarks.registry import benchmarks

    parser = argparse.ArgumentParser(prog=f"jaxeval {where}", add_help=False)
    add_run_arguments(parser, benchmarks())
    switches = {option for action in parser._actions if isinstance(action, argparse._StoreTrueAction)
                for option in action.option_strings}
    argv = []
    for key, value in values.items():
        if value is None or (f"--{key}" in switches and value is False):
            continue
        argv += [f"--{key}"] if f"--{key}" in switches and value is True else [f"--{key}", str(value)]
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        raise ConfigError(f"{where}: these settings are not valid `jaxeval run` flags: {' '.join(argv)}") from None
    return run_flags(args)
