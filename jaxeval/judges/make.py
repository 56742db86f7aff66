"""A judge from its command-line spec ("http:BASE_URL:MODEL" or "local:PATH").

Above the judge interface (jaxeval.judges.base) and both backends: they never import this.
"""

from __future__ import annotations

import re

from jaxeval.errors import ConfigError
from jaxeval.judges.base import Judge


def make_judge(spec: str, **options) -> Judge:
    """A judge from a CLI string: "http:BASE_URL:MODEL" or "local:PATH".

    BASE_URL may contain colons (http://host:port/v1); the model name is the text after the last
    colon and may contain slashes (Qwen/Qwen3-8B). `options` go to the backend's constructor
    (HttpJudge or LocalJudge).
    """
    kind, sep, rest = spec.partition(":")
    if kind == "http" and sep:
        base_url, sep2, model = rest.rpartition(":")
        if (not sep2 or not base_url.startswith(("http://", "https://")) or not model
                or model.startswith("/") or re.match(r"\d+(/|$)", model)):
            raise ConfigError(f"judge {spec!r}: expected http:BASE_URL:MODEL, e.g. "
                              "http:http://127.0.0.1:8000/v1:gpt-4o-2024-05-13")
        from jaxeval.judges.http import HttpJudge  # imported on use: the local judge pulls in JAX, HTTP does not
        return HttpJudge(base_url, model, **options)
    if kind == "local" and sep and rest:
        from jaxeval.judges.local import LocalJudge
        return LocalJudge.from_path(rest, **options)
    raise ConfigError(f"judge {spec!r}: expected http:BASE_URL:MODEL or local:PATH")
