"""Loading a perf/ script as a module (perf/ is not a package) for its tests."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str):
    """perf/<name>.py imported under the module name `name`."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "perf" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
