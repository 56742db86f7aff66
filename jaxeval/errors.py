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
