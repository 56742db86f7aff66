"""Real-weight tier (-m realweights): Gemma 3 270M and SmolLM2-135M folders built from the pip GGUF packages.

The folders are built once by scripts/build_real_models.py into JAXEVAL_REAL_MODELS (default
~/.cache/jaxeval/real_models, the script's default, so a folder built by hand is reused). Without
the GGUF packages the tests skip and name the package to install; any other build failure fails.
Each test adds its figures to a table printed at the end of the run and written to
<cache>/realweights_report.json (docs/models.md's "Real weights" figures come from there).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("JAXEVAL_REAL_MODELS", "~/.cache/jaxeval/real_models")).expanduser()

REPORT: list[dict] = []  # one entry per finished check, in run order


def _builder():
    """scripts/build_real_models.py, imported as a module (one copy, shared with any other test importing it)."""
    if str(REPO / "scripts") not in sys.path:
        sys.path.insert(0, str(REPO / "scripts"))
    import build_real_models

    return build_real_models


@pytest.fixture(scope="session")
def builder():
    """The scripts/build_real_models.py module."""
    return _builder()


@pytest.fixture(scope="session")
def real_model_folder():
    """name -> the built HF folder (built on first use; skips when its GGUF package is not installed)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the folders are complete: nothing may come from the hub
    builder = _builder()
    built: dict[str, Path] = {}

    def folder(name: str) -> Path:
        if name not in built:
            try:
                built[name] = builder.build(name, CACHE, log=lambda _: None)
            except builder.MissingPackageError as error:
                pytest.skip(f"{name}: {error}")
        return built[name]

    return folder


@pytest.fixture
def report():
    """Record one check's figures: report(kind=..., model=..., **figures); the wall time is added."""
    start = time.perf_counter()

    def add(**entry):
        REPORT.append({**entry, "wall_s": round(time.perf_counter() - start, 1)})

    return add


def pytest_terminal_summary(terminalreporter):
    if not REPORT:
        return
    terminalreporter.section("real weights: jaxeval vs transformers (float32)")
    for entry in REPORT:
        if entry["kind"] == "logprobs":
            windows = "  ".join(f"{w}: {d:.2e}" for w, d in entry["window_max_abs_diff"].items())
            terminalreporter.write_line(
                f"{entry['model']:<13} {entry['length']:>4}  max |d logprob| {entry['max_abs_diff']:.2e}  "
                f"(> tol at {entry['positions_over_tol']} of {entry['positions']})  top-1 mismatches "
                f"{entry['top1_mismatches']}  mean NLL {entry['mean_nll']:.2f} ({entry['mean_nll_in_context']:.2f} in "
                f"context)  {entry['wall_s']:.0f} s")
            terminalreporter.write_line(f"{'':<13} per 4k window: {windows}")
        elif entry["kind"] == "delta":
            groups = "  ".join(f"{g}: {v['delta']} {v['ci']} (n={v['paired']})" for g, v in entry["groups"].items())
            terminalreporter.write_line(
                f"{entry['model']:<13} {entry['comparison']}, {entry['benchmark']}: {entry['identical_outputs']} of "
                f"{entry['samples']} outputs identical; paired delta {groups}  {entry['wall_s']:.0f} s")
        else:
            terminalreporter.write_line(
                f"{entry['model']:<13} greedy {entry['new_tokens']} tokens after {entry['prompt_tokens']}: "
                f"{'identical' if entry['identical'] else 'DIFFER at ' + str(entry['first_difference'])}  "
                f"{entry['wall_s']:.0f} s")
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / "realweights_report.json").write_text(json.dumps(REPORT, indent=1) + "\n")
    except OSError as error:
        terminalreporter.write_line(f"could not write {CACHE / 'realweights_report.json'}: {error}")
