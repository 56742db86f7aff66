"""What a report is made of: runs read from results files, and per-benchmark tables and plots.

Two results layouts are read: schema version 1 (docs/results_schema.md: `results`, `lengths`,
`headline`, `details`, ...) and the earlier `{"tasks": {task: section}, "run": {...}}` (also a
bare agent-bench or LongBench section, as `jaxeval agent-bench --out` writes). Either way a run
becomes a `Run`: a label, its per-task sections and, for version 1, its summary keys.

A benchmark view is plain data (tables of strings, panels of points); report_plots.py draws
it and report_html.py lays it out, so everything here is testable without matplotlib.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from jaxeval.errors import DataError

MISSING = "-"  # a cell of a run that lacks the row


@dataclasses.dataclass(frozen=True)
class Run:
    label: str  # shown in tables and legends: the model folder name, made unique
    path: str
    sections: dict[str, Any]  # task -> the benchmark's own result section
    summary: dict[str, Any]  # schema v1 keys (results, lengths, headline, groups, ...); {} for older files
    meta: dict[str, Any]  # model, devices, git sha, date, timing


@dataclasses.dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclasses.dataclass(frozen=True)
class Panel:
    """One subplot: one line (or one bar group member) per run, over the x labels in order."""
    title: str
    x_label: str
    y_label: str
    x: tuple[str, ...]  # axis order
    by_run: dict[str, dict[str, float | None]]  # run label -> x label -> value
    kind: str = "line"  # "bar", or "heatmap" (rows x columns x, one run: by_run[row label][x])
    errors: dict[str, dict[str, tuple[float, float]]] | None = None  # run -> x -> (low, high): whiskers / band
    y_range: tuple[float, float] | None = None  # a fixed value axis (None: from the values, never one point's)
    rows: tuple[str, ...] = ()  # heatmap: its row labels (top to bottom)
    zero_line: bool = False  # a delta panel: draw y = 0


@dataclasses.dataclass(frozen=True)
class Figure:
    name: str  # file stem of its PNG
    title: str
    panels: tuple[Panel, ...]
    caption: str = ""


@dataclasses.dataclass
class BenchmarkView:
    name: str
    tables: list[Table] = dataclasses.field(default_factory=list)
    figures: list[Figure] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    # (run label, what failed, was skipped or not scored, and why): the page's failures table
    issues: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    # the headline score against context length per run, and what it is (effective context length)
    length_curve: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    curve_name: str = ""


EFFECTIVE_FRACTION = 0.9
EFFECTIVE_DEFINITION = ("effective context length: the longest length L present such that the headline score at "
                        "every length up to L stays at or above {fraction:g} x the score at the shortest length "
                        "present; '>= L' when it holds up to the longest length run (longer ones were not run)")


def effective_length(points: dict[str, float | None], fraction: float = EFFECTIVE_FRACTION) -> str:
    """The effective context length of one score-against-length curve (EFFECTIVE_DEFINITION)."""
    lengths = [length for length in sort_lengths(points) if length_key(length) is not None]
    scored = [length for length in lengths if number(points.get(length)) is not None]
    if not scored:
        return "n/a (nothing scored)"
    base = number(points[scored[0]])
    if base is None or base <= 0:
        return f"n/a (score {fmt(base)} at {scored[0]}, the shortest length)"
    kept = None
    for length in scored:
        if number(points[length]) < fraction * base:
            break
        kept = length
    if kept == scored[-1]:
        return f">= {kept}" + (" (only length run)" if len(scored) == 1 else "")
    return f"{kept} (below at {scored[scored.index(kept) + 1]})"


def shown_location(location) -> str:
    """A data or model location without the local folders above it (the page is shared; a hub id
    such as THUDM/LongBench stays whole)."""
    text = str(location)
    if text.startswith("/") or text.startswith("~") or text.startswith("."):
        return Path(text).name or text
    return text


def fmt(value, digits: int = 2) -> str:
    """A table cell: n/a for null, NaN as NaN, numbers to `digits` decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return "NaN" if math.isnan(value) else f"{value:.{digits}f}"


def number(value) -> float | None:
    """A plottable value: ints and floats (not bools, not NaN), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


# --- context-length labels: "8k", "32768", "0-4k", "8k+", "short" ... -----------------------

_ORDINAL = {"short": 0, "medium": 1, "long": 2}
_SIZE = r"(\d+(?:\.\d+)?)\s*([kKmM]?)"


def _tokens(amount: str, unit: str) -> float:
    return float(amount) * {"": 1, "k": 1024, "m": 1024 ** 2}[unit.lower()]


def length_key(label) -> float | None:
    """A sort key for a context-length label, or None if `label` is not one."""
    if not isinstance(label, str):
        return None
    text = label.strip()
    if text.lower() in _ORDINAL:
        return float(_ORDINAL[text.lower()])
    if match := re.fullmatch(_SIZE, text):
        return _tokens(*match.groups()) if match.group(2) or float(match.group(1)) >= 256 else None
    if match := re.fullmatch(_SIZE + r"\s*-\s*" + _SIZE, text):
        low_amount, low_unit, high_amount, high_unit = match.groups()
        high = _tokens(high_amount, high_unit)
        low = _tokens(low_amount, low_unit or high_unit)  # "4-8k" is 4k to 8k ...
        if low >= high:
            low = _tokens(low_amount, low_unit)  # ... but "512-1k" is 512 to 1k
        return low + 0.5  # after a plain length equal to its start
    if match := re.fullmatch(_SIZE + r"\s*\+", text):
        return _tokens(*match.groups()) + 0.75
    return None


def sort_lengths(labels) -> tuple[str, ...]:
    unique = dict.fromkeys(labels)
    return tuple(sorted(unique, key=lambda label: (length_key(label) is None, length_key(label) or 0)))


# --- reading results files -----------------------------------------------------------------

SUMMARY_KEYS = ("results", "groups", "group_subtasks", "headline", "higher_is_better", "n-samples",
                "lengths", "configs", "deviations")


def _sections_of(path: str, data: dict) -> tuple[dict, dict, dict]:
    """(sections, summary, meta) of one results file, in either layout."""
    if "schema_version" in data or "results" in data:
        from jaxeval.run.schema import SCHEMA_VERSION

        if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise DataError(f"{path}: results schema_version {data['schema_version']!r}; this jaxeval reads "
                            f"version {SCHEMA_VERSION} (docs/results_schema.md)")
        if not data.get("results") and not data.get("details"):
            raise DataError(f"{path}: a results file without results (no 'results' nor 'details' to read)")
        if not isinstance(data.get("results", {}), dict) or not isinstance(data.get("details") or {}, dict):
            raise DataError(f"{path}: 'results' and 'details' of a results file are JSON objects")
        sections = data.get("details") or {}
        summary = {key: data[key] for key in SUMMARY_KEYS if isinstance(data.get(key), dict)}
        for task in (summary.get("group_subtasks") or {}):
            sections.setdefault(task, None)
        meta = {key: data.get(key) for key in ("model", "devices", "git_hash", "date", "timing", "run_name", "config",
                                             "data_source")}
        return dict(sections), summary, meta
    if isinstance(data.get("tasks"), dict):
        return dict(data["tasks"]), {}, dict(data.get("run") or {})
    if "rows" in data and "sets" in data:  # `jaxeval agent-bench --out`
        return {"agent_bench": data}, {}, dict(data.get("run") or {})
    if data.get("benchmark") in ("longbench", "longbench_e"):  # `jaxeval score --benchmark longbench`
        return {data["benchmark"]: data}, {}, dict(data.get("run") or {})
    raise DataError(f"{path}: not a jaxeval results file (expected 'results' with 'schema_version', "
                    f"or a 'tasks' object; found keys: {', '.join(list(data)[:8]) or 'none'})")


def read_results(path: str | Path) -> tuple[dict, dict, dict]:
    from jaxeval.io.inputs import parse_json, read_text

    text = read_text(path, name="results file")
    if not text.strip():
        raise DataError(f"{path}: an empty results file")
    data = parse_json(text, path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: a results file holds a JSON object, found {type(data).__name__}")
    return _sections_of(str(path), data)


def _url_folder(url: str) -> list[str] | None:
    """The *.json files directly in a folder URL (gs://bucket/evals), or None if not a folder."""
    from jaxeval.io.fs import open_fs

    fs, inner = open_fs(url)
    if not fs.isdir(inner):
        return None
    prefix = url[:url.index("://") + 3]
    return sorted(prefix + found.split("://")[-1] for found in fs.glob(inner.rstrip("/") + "/*.json"))


def expand_paths(paths) -> list[str]:
    """Files as given (local or fsspec URLs); a folder stands for the *.json files directly in it."""
    from jaxeval.io.fs import is_url

    files = []
    for given in map(str, paths):
        found = _url_folder(given) if is_url(given) else (
            sorted(str(p) for p in Path(given).glob("*.json") if p.is_file()) if Path(given).is_dir() else None)
        if found is None:
            files.append(given)
        elif not found:
            raise DataError(f"{given}: a folder without results files (*.json)")
        else:
            files.extend(found)
    return files


def _model_name(meta: dict, path: str) -> str:
    model = meta.get("model")
    source = model.get("path") if isinstance(model, dict) else model
    return Path(str(source).rstrip("/")).name if source else Path(path).stem


def load_runs(paths) -> list[Run]:
    """One Run per results file; labels are model names, with the file name added where two clash."""
    files = expand_paths(paths)
    loaded = [(path, *read_results(path)) for path in files]
    names = [_model_name(meta, path) for path, _, _, meta in loaded]
    labels = [name if names.count(name) == 1 else f"{name} ({Path(path).stem})"
              for name, (path, *_) in zip(names, loaded)]
    seen: dict[str, int] = {}
    runs = []
    for label, (path, sections, summary, meta) in zip(labels, loaded):
        seen[label] = seen.get(label, 0) + 1
        unique = label if seen[label] == 1 else f"{label} #{seen[label]}"
        runs.append(Run(unique, str(path), sections, summary, meta))
    return runs


def model_label(run: Run) -> str:
    return _model_name(run.meta, run.path)


def _identity(run: Run) -> str:
    model = run.meta.get("model")
    if isinstance(model, dict) and model.get("fingerprint"):
        return str(model["fingerprint"])
    return f"{model_label(run)}|{json_key(model)}"


def json_key(value) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def merge_model_runs(runs: list[Run]) -> list[Run]:
    """Results files of one model (same fingerprint, or same model record) over different tasks
    become one run, in first-seen order; files of one model that share a task stay apart."""
    groups: list[list[Run]] = []
    for run in runs:
        home = next((group for group in groups if _identity(group[0]) == _identity(run)
                     and not any(set(run.sections) & set(other.sections) for other in group)), None)
        if home is None:
            groups.append([run])
        else:
            home.append(run)
    merged = []
    for group in groups:
        if len(group) == 1:
            merged.append(group[0])
            continue
        sections, summary = {}, {}
        for run in group:
            sections.update(run.sections)
            for key, value in run.summary.items():
                summary.setdefault(key, {}).update(value)
        meta = {**group[0].meta, "files": [run.path for run in group]}
        merged.append(Run(group[0].label, group[0].path, sections, summary, meta))
    names = [model_label(run) for run in merged]
    return [dataclasses.replace(run, label=name) if names.count(name) == 1 and len(run.meta.get("files") or ()) > 1
            else run for run, name in zip(merged, names)]


# --- finding length breakdowns in sections nobody told us about -----------------------------

SCORE_KEYS = ("score", "value", "accuracy", "acc", "mean", "avg", "average")


def _point(value) -> float | None:
    if (plain := number(value)) is not None:
        return plain
    if isinstance(value, dict):
        for key in SCORE_KEYS:
            if (found := number(value.get(key))) is not None:
                return found
    return None


def length_breakdowns(section, max_depth: int = 5) -> dict[str, dict[str, float | None]]:
    """path -> {length label: value} for every mapping in `section` keyed by context lengths only.

    A value is a number, or a mapping with a numeric score/value/accuracy/mean. Mappings with no
    plottable value are skipped; lists (per-sample data) are not searched.
    """
    found: dict[str, dict[str, float | None]] = {}

    def walk(node, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict) or not node or len(path) > max_depth:
            return
        if all(length_key(key) is not None for key in node):
            points = {key: _point(value) for key, value in node.items()}
            if any(value is not None for value in points.values()):
                found["/".join(path) or "(top)"] = points
                return
        for key, value in node.items():
            walk(value, (*path, str(key)))

    walk(section, ())
    return found


def row_table(title: str, first: str, labels: Sequence[str], values: dict[str, dict[str, str]]) -> Table:
    """Rows in first-seen order across runs, one column per run."""
    order = list(dict.fromkeys(row for run in labels for row in values.get(run, {})))
    return Table(title, (first, *labels), tuple((row, *(values.get(run, {}).get(row, MISSING) for run in labels))
                                                 for row in order))
