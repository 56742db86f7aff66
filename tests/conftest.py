"""Every test starts with no registered secret.

`jaxeval.secrets` is process-wide: a key one test registers (the serve and judge tests set
theirs in the environment) would otherwise mask its fragments in the paths and messages of every
later test, so that a temporary folder such as pytest-126 reads pytes***6 after "serve-secret-123".
"""

import pytest

from jaxeval import secrets


@pytest.fixture(autouse=True)
def _no_registered_secrets():
    secrets.forget_all()
    yield
    secrets.forget_all()
