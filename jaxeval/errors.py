"""Errors a user can cause. Each message names the file, record id and field involved.

The CLI prints these as one line (no traceback); anything else is a bug in jaxeval.
"""


class JaxevalError(Exception):
    """Base class of every user-facing error."""


class ConfigError(JaxevalError):
    """A model or run config is missing, malformed or asks for something unsupported."""


class CheckpointError(JaxevalError):
    """A model folder or checkpoint is missing files, garbled or inconsistent with its config."""


class DataError(JaxevalError):
    """A benchmark file or record is missing, malformed or inconsistent."""


class InputTooLongError(JaxevalError):
    """A text is longer than the model's maximum position."""


def print_user_error(e: JaxevalError) -> int:
    """A user's error: one line on stderr (never a key in it; a library's multi-line message
    joined); the exit status 2 that every command gives for it."""
    import sys

    from jaxeval.secrets import scrub

    print(f"jaxeval: error: {' '.join(scrub(str(e)).split())}", file=sys.stderr)
    return 2
