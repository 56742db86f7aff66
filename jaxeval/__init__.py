"""jaxeval: long-context language-model evaluation in JAX/Flax."""

from jaxeval.api import Model, load_model

__all__ = ["Model", "load_model"]
__version__ = "0.1.0"
