"""The import graph of jaxeval, read with ast from the source (nothing is imported).

Rules, and how imports are counted:
- Every import counts, at module level or inside a function (a lazy import is still a
  dependency, and one that closes a cycle only hides it until the call); imports under
  `if TYPE_CHECKING:` do not (they never run).
- `import a.b.c` is an edge to a.b.c; `from p import n` is an edge to p (Python runs p and takes
  n from it) and, when p.n is a module, to p.n too. The parent packages Python initialises on
  the way are not edges: a thin `__init__` re-exporting its submodules is the intended shape,
  and it is cyclic only when a submodule takes names from the package itself.
1. Layering: a module under jaxeval/models imports, of jaxeval, only jaxeval.models and the leaf
   modules jaxeval.errors and the jaxeval.io package (never the weights, engine, benchmarks, run,
   report, judges, metrics, the CLI or the API above it).
2. jaxeval.io, the input/output boundary, is the ground floor: of jaxeval it imports only
   itself, jaxeval.errors and jaxeval.secrets.
3. No cycles among jaxeval modules.
4. Floors: every package (a top-level module or folder of jaxeval) stands on one floor of FLOORS,
   and no import (module level or lazy) reaches a higher floor, so no path of imports, however
   long, climbs; within a floor the package graph has no loop either. A new package must be given
   its floor here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jaxeval"
MODELS_MAY_IMPORT = ("jaxeval.models", "jaxeval.errors", "jaxeval.io")
IO_MAY_IMPORT = ("jaxeval.io", "jaxeval.errors", "jaxeval.secrets")

# Bottom up. The ground floor is file I/O (jaxeval/io/) and the process-wide leaves.
FLOORS = (
    ("errors", "progress", "interrupt", "secrets", "io", "embedded"),
    ("metrics", "fingerprint"),
    ("models",),
    ("options",),  # the flag machinery, ModelOptions (its KV policy read by models.kv_policy), RunOptions, RunFlags
    ("weights",),
    ("engine",),
    ("generation",),
    ("run",),
    ("report",),
    ("api",),
    ("embedding", "judges", "lm_eval"),
    ("benchmarks", "serve", "curve"),
    ("tasks", "model_checks"),
    ("plan",),
    # run_flags: the flags of run / validate / plan; in_process (jaxeval.evaluate): a run's RunFlags on live
    # parameters, built without the CLI
    ("bench", "suite", "series", "aot", "run_flags", "in_process"),
    ("cli",),
    ("__init__",),  # the package's face: load_model, Model, evaluate, re-exported lazily
)


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under `package` (packages named by their __init__)."""
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _under_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported jaxeval module, line) for each import in the file, by the rules above."""
    found = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if _under_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno) for a in child.names if a.name in modules)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: from the file's package, up level - 1 packages
                    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(package[:len(package) - child.level + 1] + ([base] if base else []))
                if base in modules:
                    found.append((base, child.lineno))
                found.extend((f"{base}.{a.name}", child.lineno) for a in child.names if f"{base}.{a.name}" in modules)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return [(target, line) for target, line in found if target != name]


def import_graph(package: Path) -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int]]]]:
    modules = module_files(package)
    edges = {name: imports_of(name, path, modules) for name, path in modules.items()}
    return {name: {t for t, _ in found} for name, found in edges.items()}, edges


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def package_of(module: str) -> str:
    """The floor-plan unit of a module: jaxeval.X.* -> X (jaxeval itself: __init__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor_violations(edges: dict[str, list[tuple[str, int]]], floors=FLOORS) -> tuple[list[str], list[str]]:
    """(packages with no floor, imports that reach a higher floor)."""
    floor = {package: level for level, names in enumerate(floors) for package in names}
    unplaced = sorted({package_of(name) for name in edges} - set(floor))
    up = [f"{name} (floor {floor[package_of(name)]}) imports {target} (line {line}, floor {floor[package_of(target)]})"
          for name, found in sorted(edges.items()) for target, line in found
          if package_of(name) in floor and package_of(target) in floor
          and floor[package_of(target)] > floor[package_of(name)]]
    return unplaced, up


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        out.setdefault(package_of(name), set()).update(package_of(t) for t in targets if package_of(t) != package_of(name))
    for targets in list(out.values()):
        for target in targets:
            out.setdefault(target, set())
    return out


def test_every_package_stands_on_its_floor_and_no_import_climbs():
    graph, edges = import_graph(PACKAGE)
    unplaced, up = floor_violations(edges)
    assert not unplaced, f"give these packages a floor in FLOORS: {', '.join(unplaced)}"
    assert not up, "\n".join(up)
    loops = cycles(package_graph(graph))
    assert not loops, "\n".join(" <-> ".join(c) for c in loops)


def test_models_import_nothing_above_them():
    _, edges = import_graph(PACKAGE)
    wrong = [f"{name} imports {target} (line {line})" for name, found in sorted(edges.items())
             if name.startswith("jaxeval.models") for target, line in found
             if not any(target == ok or target.startswith(ok + ".") for ok in MODELS_MAY_IMPORT)]
    assert not wrong, "\n".join(wrong)


def test_io_is_the_ground_floor():
    _, edges = import_graph(PACKAGE)
    wrong = [f"{name} imports {target} (line {line})" for name, found in sorted(edges.items())
             if name == "jaxeval.io" or name.startswith("jaxeval.io.") for target, line in found
             if not any(target == ok or target.startswith(ok + ".") for ok in IO_MAY_IMPORT)]
    assert any(name.startswith("jaxeval.io.") for name in edges) and not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph, _ = import_graph(PACKAGE)
    assert sum(map(len, graph.values())) > 100  # the parser sees the real imports
    found = cycles(graph)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_see_cycles_and_layering(tmp_path):
    package = tmp_path / "jaxeval"
    (package / "models").mkdir(parents=True)
    (package / "helmet").mkdir()
    files = {
        "__init__.py": "", "errors.py": "",
        "models/__init__.py": "", "models/a.py": "def f():\n    from jaxeval.models import b\n",
        "models/b.py": "from . import a\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jaxeval.engine\n",
        "engine.py": "import jaxeval.models.a\n",
        "models/c.py": "def g():\n    import jaxeval.engine\n",
        "helmet/__init__.py": "from jaxeval.helmet.runner import run\n",
        "helmet/runner.py": "from jaxeval.helmet import judging\nrun = 1\n", "helmet/judging.py": "",
    }
    for rel, text in files.items():
        (package / rel).write_text(text)
    graph, edges = import_graph(package)
    assert sorted(cycles(graph)) == [["jaxeval.helmet", "jaxeval.helmet.runner"], ["jaxeval.models.a", "jaxeval.models.b"]]
    assert edges["jaxeval.models.c"] == [("jaxeval.engine", 2)] and "jaxeval.engine" not in graph["jaxeval.models.b"]


def test_the_floor_checks_see_climbs_and_package_loops(tmp_path):
    package = tmp_path / "jaxeval"
    (package / "io").mkdir(parents=True)
    files = {
        "__init__.py": "", "errors.py": "",
        "io/__init__.py": "", "io/text.py": "import jaxeval.errors\n",
        "models.py": "import jaxeval.io.text\n",
        "engine.py": "def f():\n    import jaxeval.api\n",  # a lazy import still climbs
        "api.py": "import jaxeval.engine\n", "judges.py": "import jaxeval.serve\n", "serve.py": "import jaxeval.judges\n",
    }
    for rel, text in files.items():
        (package / rel).write_text(text)
    graph, edges = import_graph(package)
    floors = (("errors", "io"), ("models",), ("engine",), ("api", "judges", "serve"))
    unplaced, up = floor_violations(edges, floors)
    assert unplaced == ["__init__"]  # a package with no floor is named
    assert up == ["jaxeval.engine (floor 2) imports jaxeval.api (line 2, floor 3)"]  # io/ is the ground floor
    assert cycles(package_graph(graph)) == [["api", "engine"], ["judges", "serve"]]  # loops within a floor too
