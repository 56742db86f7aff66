"""jaxeval: long-context language-model evaluation in JAX/Flax."""

import logging

__all__ = ["Model", "load_model", "evaluate"]
__version__ = "0.1.0"


class _NoTorchNotice(logging.Filter):
    """transformers' "PyTorch was not found" notice: jaxeval needs only its tokenizers, so the line
    would greet every command; every other transformers message still gets through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("PyTorch was not found")


logging.getLogger("transformers").addFilter(_NoTorchNotice())  # before transformers is imported


def __getattr__(name):
    # JAX is imported on first use only, so model-free commands (`jaxeval score`) start fast.
    if name == "evaluate":  # live parameters from a training loop (jaxeval/in_process.py)
        from jaxeval.in_process import evaluate

        return evaluate
    if name in __all__:
        from jaxeval import api

        return getattr(api, name)
    raise AttributeError(f"module 'jaxeval' has no attribute {name!r}")
