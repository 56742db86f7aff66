import os

import pytest


@pytest.fixture
def compile_environment(monkeypatch):
    """jaxeval.aot.targets.prepare_environment's variables, restored after the test (a compile in this process)."""
    for name, value in (("JAX_PLATFORMS", "cpu"), ("ALLOW_MULTIPLE_LIBTPU_LOAD", "1"),
                        ("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")):
        monkeypatch.setenv(name, os.environ.get(name, value))
