"""`jaxeval report RESULTS... --out DIR`: headline tables in the terminal, an HTML page with plots.

    jaxeval report results/model_a.json results/model_b.json --out report/
    # prints one table per benchmark (a column per run), writes report/index.html and its PNGs:
    # score against context length for every benchmark, score against distance for the agent
    # bench, runs side by side (one colour per run).

Sections the report does not know are drawn when they carry a length breakdown and listed in
a "not recognised" table otherwise; partial results (a task in one run only, null scores)
give gaps, not errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Mapping, Sequence

from jaxeval.errors import DataError
from jaxeval.report.data import (
    EFFECTIVE_DEFINITION, EFFECTIVE_FRACTION, MISSING, BenchmarkView, Run, Table, effective_length, load_runs,
    merge_model_runs, model_label,
)
from jaxeval.report.views import describe_section, generic_view

PAGE = "index.html"


def _known_view(view, task: str, runs: Sequence[Run]) -> tuple[BenchmarkView | None, list[tuple[str, ...]]]:
    """The task's own view (its benchmark's report_view), or None and why each run's section
    could not be read as one."""
    pairs = [(run.label, run.sections[task]) for run in runs if isinstance(run.sections.get(task), dict)]
    if not pairs:
        return None, []
    try:
        return view(pairs), []
    except (KeyError, TypeError, AttributeError, ValueError) as error:  # a section of another shape
        why = f"not in the {task} layout this report reads ({type(error).__name__}: {error})"
        return None, [(label, task, describe_section(section), why) for label, section in pairs]


def build_views(runs: Sequence[Run], benchmarks: Mapping) -> tuple[list[BenchmarkView], Table]:
    """A view per task present in any run, in first-seen order, and the table of the rest.
    benchmarks: task -> its Benchmark (jaxeval.benchmarks.registry.run_tasks(), from the caller),
    whose report_view draws the task's section."""
    known = {task: view for task, benchmark in benchmarks.items() if (view := benchmark.report_view(task))}
    tasks = list(dict.fromkeys(task for run in runs for task in run.sections))
    views, unknown = [], []
    for task in tasks:
        having = [run for run in runs if task in run.sections]
        view, failed = _known_view(known[task], task, having) if task in known else (None, [])
        if view is None:
            try:
                view = generic_view(task, having)
            except (KeyError, TypeError, AttributeError, ValueError) as error:  # a summary of another shape
                failed = failed or [(run.label, task, describe_section(run.sections[task]),
                                     f"unreadable summary ({type(error).__name__}: {error})") for run in having]
        if view is None:
            unknown.extend(failed or [(run.label, task, describe_section(run.sections[task]),
                                       "no headline rows or length breakdown found") for run in having])
            continue
        unknown.extend(failed)
        missing = [run.label for run in runs if run not in having]
        if missing:
            view.notes.append(f"not in: {', '.join(missing)}")
        views.append(view)
    return views, Table("Sections not recognised (not drawn)", ("run", "section", "content", "why"), tuple(unknown))


def format_table(table: Table) -> str:
    """An aligned terminal table: first column left, the others right."""
    lines = [table.columns, *table.rows]
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(table.columns))]

    def render(cells) -> str:
        first, *rest = map(str, cells)
        return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:]))]).rstrip()

    return "\n".join([table.title, render(table.columns), "  ".join("-" * w for w in widths),
                      *(render(row) for row in table.rows)])


def _comparison_views(runs: list[Run], reference: Run | None, options: dict,
                      benchmarks: Mapping) -> list[BenchmarkView]:
    """With a reference: its comparison with every other run, first on the page."""
    if reference is None:
        return []
    from jaxeval.report.compare import compare_runs
    from jaxeval.report.compare_view import comparison_views

    return [view for run in runs if run is not reference
            for view in comparison_views(compare_runs(reference, run, benchmarks, **options))]


def summary_tables(runs: Sequence[Run], views: Sequence[BenchmarkView], fraction: float) -> list[Table]:
    """The effective context length per benchmark and run, and every failure, skip and unscored
    count the views found (each with its reason)."""
    labels = [run.label for run in runs]
    rows = [(f"{view.name}: {view.curve_name}", *(effective_length(view.length_curve[label], fraction)
                                                  if label in view.length_curve else MISSING for label in labels))
            for view in views if view.length_curve]
    definition = EFFECTIVE_DEFINITION.format(fraction=fraction)
    effective = Table(definition[0].upper() + definition[1:], ("benchmark: score", *labels),
                      tuple(rows))
    issues = Table("Failures, skips and unscored samples", ("run", "benchmark", "what", "why"),
                   tuple((label, view.name, what, why) for view in views for label, what, why in view.issues))
    return [effective, issues]


def build_report(paths: Sequence[str | Path], out_dir: str | Path, benchmarks: Mapping, embed: bool = False,
                 echo=print, reference: str | Path | None = None, resamples: int | None = None,
                 seed: int | None = None, level: float | None = None,
                 fraction: float = EFFECTIVE_FRACTION) -> Path:
    """Read the results files, print their tables with `echo`, write out_dir/index.html (+ PNGs).
    reference: a results file the others are compared with, sample by sample (compare.py).
    benchmarks: task -> its Benchmark (jaxeval.benchmarks.registry.run_tasks())."""
    from jaxeval.report.page import write_page
    from jaxeval.report.plots import render_figure

    runs, reference_run = load_report_runs(paths, reference)
    options = {name: value for name, value in (("resamples", resamples), ("seed", seed), ("level", level))
               if value is not None}
    compared = _comparison_views(runs, reference_run, options, benchmarks)
    views, unknown = build_views(runs, benchmarks)
    from jaxeval.report.spread import add_error_bars

    add_error_bars(views, runs, benchmarks)
    views = compared + views
    out_dir = Path(out_dir)
    labels = [run.label for run in runs]
    images = {}
    for view in views:
        echo(f"\n== {view.name} ==")
        for table in view.tables:
            echo(format_table(table))
        for note in view.notes:
            echo(f"note: {note}")
        for figure in view.figures:
            images[(view.name, figure.name)] = render_figure(figure, labels, out_dir / f"{figure.name}.png")
    extra = summary_tables(runs, views, fraction)
    for table in extra:
        if table.rows:
            echo("\n" + format_table(table))
    if unknown.rows:
        echo("\n" + format_table(unknown))
    page = write_page(out_dir / PAGE, runs, views, images, unknown, embed=embed, reference=reference_run,
                      extra=extra[:1], closing=extra[1:])
    if embed:
        for png in images.values():
            png.unlink()
    return page


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", help="results JSON files or folders of them, local or fsspec URLs "
                                                    "(gs://bucket/evals); one run per file")
    parser.add_argument("--out", default="report", help="folder for index.html and its PNG plots")
    parser.add_argument("--embed", action="store_true", help="put the plots inside index.html (one file)")
    parser.add_argument("--effective_fraction", type=float, default=EFFECTIVE_FRACTION,
                        help="effective context length: the longest length whose score stays at or above this "
                             "fraction of the shortest length's")
    add_reference_arguments(parser)


def add_reference_arguments(parser: argparse.ArgumentParser, run: bool = False) -> None:
    """--reference and the bootstrap's settings (`jaxeval report`, and `jaxeval run` with run=True)."""
    from jaxeval.report.paired import LEVEL, RESAMPLES, SEED

    parser.add_argument("--reference", default=None, metavar="RESULTS",
                        help="the original's results file: " + ("after the run, compare this run with it sample by "
                                                                 "sample (report beside the results)" if run else
                                                                 "every other run is compared with it sample by "
                                                                 "sample (paired deltas, bootstrap intervals)"))
    parser.add_argument("--bootstrap", type=int, default=RESAMPLES, help="paired bootstrap resamples")
    parser.add_argument("--bootstrap_seed", type=int, default=SEED, help="seed of the bootstrap's draws")
    parser.add_argument("--ci", type=float, default=LEVEL, help="confidence level of the intervals")


def check_reference_arguments(values) -> None:
    """--bootstrap, --ci and (`jaxeval report`) --effective_fraction: from the report's parsed flags or a
    run's flags by dest (jaxeval.options.flags.RunFlags.extra)."""
    from jaxeval.errors import ConfigError

    values = values if isinstance(values, Mapping) else vars(values)
    bootstrap, ci, fraction = values["bootstrap"], values["ci"], values.get("effective_fraction", 0.5)
    if bootstrap < 1:
        raise ConfigError(f"--bootstrap must be a positive number of resamples, got {bootstrap}")
    if not 0 < fraction <= 1:
        raise ConfigError(f"--effective_fraction must be in (0, 1], got {fraction}")
    if not 0 < ci < 1:
        raise ConfigError(f"--ci must be between 0 and 1 (e.g. 0.95), got {ci}")


def load_report_runs(paths: Sequence[str | Path], reference: str | Path | None) -> tuple[list[Run], Run | None]:
    """The runs (the reference first when given, labelled as such) and the reference run."""
    import dataclasses

    if reference is None:
        return merge_model_runs(load_runs(paths)), None
    runs = load_runs([reference, *paths])
    if len(runs) < 2:
        raise DataError(f"{reference}: a reference needs at least one results file to compare with it")
    names = [model_label(run) for run in runs]
    labelled = [dataclasses.replace(runs[0], label=f"{names[0]} (reference)")]
    for index, (run, name) in enumerate(zip(runs[1:], names[1:]), 1):
        labelled.append(dataclasses.replace(run, label=f"{name} (modified{'' if len(runs) == 2 else f' {index}'})"))
    return labelled, labelled[0]
