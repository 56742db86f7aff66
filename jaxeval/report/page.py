"""The report as one HTML page: runs, then per benchmark its tables, plots and notes.

The page needs nothing from the network: plots are PNG files beside it (or, with embed,
base64 data URIs inside it), styles are inline, and there is no script.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Sequence

from jaxeval.report.data import BenchmarkView, Run, Table, fmt, shown_location

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1500px; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 12px 0 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
figure { margin: 8px 0 24px; } figcaption { font-size: 12px; color: #555; }
img.plot { max-width: 100%; border: 1px solid #eee; }
p.note { font-size: 13px; color: #7a4b00; }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(table: Table) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = [f"<td>{_e(row[0])}</td>"] + [f'<td class="num">{_e(c)}</td>' for c in row[1:]]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f"<h3>{_e(table.title)}</h3>\n<table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _image_src(png: Path, page_dir: Path, embed: bool) -> str:
    if embed:
        return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
    return png.relative_to(page_dir).as_posix()


def _runs_table(runs: Sequence[Run]) -> Table:
    rows = []
    for run in runs:
        meta = run.meta
        devices = meta.get("devices") if isinstance(meta.get("devices"), dict) else {}
        timing = meta.get("timing") if isinstance(meta.get("timing"), dict) else {}
        wall = meta.get("wall_time_s", timing.get("wall_time_s"))
        files = meta.get("files") or [run.path]
        rows.append((run.label, ", ".join(Path(str(file)).name for file in files), str(meta.get("created") or meta.get("date") or "-"),
                     str(meta.get("git_sha") or meta.get("git_hash") or "-")[:12],
                     f"{devices.get('count', '?')} x {devices.get('kind', '?')}" if devices else "-",
                     fmt(wall, 1) if wall is not None else "-", ", ".join(run.sections) or "-"))
    return Table("Runs", ("run", "file", "date", "git", "devices", "wall time (s)", "sections"), tuple(rows))


def _provenance_table(runs: Sequence[Run]) -> Table:
    """What each number rests on: the data (shipped sample or real, items scored), the model's size,
    dtype, quantization and KV cache, and the run's seed and --limit."""
    rows = []
    for run in runs:
        meta = run.meta
        model = meta.get("model") if isinstance(meta.get("model"), dict) else {}
        config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
        size = model.get("param_bytes")
        sources = meta.get("data_source") if isinstance(meta.get("data_source"), dict) else {}
        for task in run.sections or ["-"]:
            source = sources.get(task) if isinstance(sources.get(task), dict) else {}
            items = source.get("items") if isinstance(source.get("items"), dict) else {}
            data = ("shipped stand-in sample (not the benchmark; " + str(source.get("real_data", "")) + ")"
                    if source.get("shipped_sample") else shown_location(source["data"]) if source.get("data") else "-")
            rows.append((run.label, task, data,
                         f"{items.get('effective', '?')} of {items.get('original', '?')}" if items else "-",
                         shown_location(model.get("path", "-")),
                         f"{size / 2**20:,.1f} MiB" if isinstance(size, (int, float)) else "-",
                         str(model.get("dtype", "-")), str(model.get("quantization") or "none"),
                         str(model.get("kv_cache") or "exact"), str(config.get("seed", "-")),
                         str(config.get("limit") if config.get("limit") is not None else "all")))
    return Table("Provenance", ("run", "task", "data", "items scored", "model", "weights", "dtype", "quantization",
                                "KV cache", "seed", "limit"), tuple(rows))


def _anchor(table: Table) -> str:
    return "".join(c if c.isalnum() else "-" for c in table.title.lower())[:40]


def page_title(runs: Sequence[Run], reference: Run | None = None) -> str:
    """One run: its label; several: their labels side by side; with a reference: the others against it."""
    if reference is not None:
        others = [run.label for run in runs if run is not reference]
        return f"jaxeval report: {', '.join(others)} against {reference.label}"
    labels = [run.label for run in runs]
    return f"jaxeval report: {', '.join(labels)}" + (" (side by side)" if len(labels) > 1 else "")


def write_page(path: Path, runs: Sequence[Run], views: Sequence[BenchmarkView],
               images: dict[tuple[str, str], Path], unknown: Table | None, embed: bool = False,
               reference: Run | None = None, extra: Sequence[Table] = (), closing: Sequence[Table] = ()) -> Path:
    """Write the page; `images` maps (benchmark, figure name) to its PNG file; `extra`: tables
    after the runs' (effective context length); `closing`: tables at the end (failures and
    skips), linked from the top."""
    parts = [f"<h1>{_e(page_title(runs, reference))}</h1>", _table(_runs_table(runs)),
             _table(_provenance_table(runs))]
    parts.extend(_table(table) for table in extra if table.rows)
    for table in closing:
        if table.rows:
            parts.append(f'<p class="note"><a href="#{_e(_anchor(table))}">{_e(table.title)}: {len(table.rows)}</a> '
                         f'(end of the page)</p>')
    for view in views:
        parts.append(f'<section id="{_e(view.name)}"><h2>{_e(view.name)}</h2>')
        parts.extend(_table(table) for table in view.tables)
        for figure in view.figures:
            png = images[(view.name, figure.name)]
            parts.append(f'<figure><img class="plot" src="{_e(_image_src(png, path.parent, embed))}" '
                         f'alt="{_e(figure.title)}"><figcaption>{_e(figure.title)}'
                         f'{". " + _e(figure.caption) if figure.caption else ""}</figcaption></figure>')
        parts.extend(f'<p class="note">{_e(note)}</p>' for note in view.notes)
        parts.append("</section>")
    for table in closing:
        if table.rows:
            parts.append(f'<section id="{_e(_anchor(table))}">{_table(table)}</section>')
    if unknown is not None and unknown.rows:
        parts.append('<section id="unrecognised"><h2>Sections not recognised</h2>')
        parts.append(_table(unknown))
        parts.append("</section>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>jaxeval report</title><style>{STYLE}</style></head>\n<body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
