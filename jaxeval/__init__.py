"""jaxeval: long-context language-model evaluation in JAX/Flax."""

__all__ = ["Model", "load_model"]
__version__ = "0.1.0"


def __getattr__(name):
    # JAX is imported on first use only, so model-free commands (`jaxeval score`) start fast.
    if name in __all__:
        from jaxeval import api

        return getattr(api, name)
    raise AttributeError(f"module 'jaxeval' has no attribute {name!r}")
