"""`python -m jaxeval.lm_eval ARGS` (or `jaxeval-lm-eval ARGS`): lm-eval's own command line, with
the `jaxeval` model registered.

lm-eval 0.4.x resolves --model in its registry and reads no plugin entry points, so plain
`lm_eval --model jaxeval` cannot see an outside model; this runs lm-eval's CLI (same flags,
same output) after importing the adapter. (The `lm_eval.models` entry point in pyproject.toml
serves lm-eval versions that discover plugins.)

Multi-host: start the same command on every process with JAXEVAL_COORDINATOR /
JAXEVAL_NUM_PROCESSES / JAXEVAL_PROCESS_ID (or JAXEVAL_DISTRIBUTED=1). Process 0 runs lm-eval;
the others only serve its engine calls (jaxeval/lm_eval/hosts.py) and exit when it is done.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from jaxeval.engine.distributed import initialize_distributed
    from jaxeval.lm_eval import close_followers, follow
    from jaxeval.lm_eval.hosts import open_followers

    if initialize_distributed():
        import jax

        if jax.process_index() != 0:
            follow()
            return 0
        open_followers()  # whatever lm-eval does (even fail before loading a model), they get a "stop"
    from lm_eval.__main__ import cli_evaluate

    from jaxeval.errors import JaxevalError, print_user_error

    sys.argv = ["lm_eval", *(sys.argv[1:] if argv is None else argv)]
    try:
        cli_evaluate()
    except JaxevalError as e:  # the adapter's model_args, the model folder: one line, as `jaxeval run`
        return print_user_error(e)
    finally:
        close_followers()
    return 0


if __name__ == "__main__":
    sys.exit(main())
