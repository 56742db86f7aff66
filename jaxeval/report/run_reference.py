"""`jaxeval run ... --reference ORIGINAL.json`: the run's comparison with its original, written
beside its results as `<run name>.vs-reference/index.html` (the page `jaxeval report RESULTS
--reference ORIGINAL` draws, with the same --bootstrap, --bootstrap_seed and --ci).

The reference is read and checked against the run's tasks and settings before the model loads
(a bad file or a mismatch is one line, exit 2, and nothing runs); the report is made after the
results are written, by process 0, for a local output folder (for a URL: the command to make it
is printed).
"""

from __future__ import annotations

from jaxeval.report.data import Run, load_runs

FOLDER_SUFFIX = ".vs-reference"


def check_reference(flags, tasks: list[str], benchmarks) -> None:
    """DataError / ConfigError before any work when the reference cannot be compared with this run
    (flags: its jaxeval.options.flags.RunFlags). benchmarks: task -> its Benchmark
    (jaxeval.benchmarks.registry.run_tasks())."""
    from jaxeval.report.compare import check_comparable
    from jaxeval.report.build import check_reference_arguments
    from jaxeval.run.config import recorded_config

    if not flags.flag("reference"):
        return
    check_reference_arguments(flags.extra)
    (reference,) = load_runs([flags.flag("reference")])
    this = Run("this run", "this run", {task: None for task in tasks}, {}, {"config": recorded_config(flags, tasks, benchmarks)})
    check_comparable(reference, this, benchmarks)


def report_against_reference(flags, name: str, results_path: str, benchmarks) -> str | None:
    """Write the comparison page beside the results; its path, or None (printed why)."""
    from jaxeval.report.build import build_report
    from jaxeval.run.config import output_folder
    from jaxeval.io.fs import is_url, join

    reference = flags.flag("reference")
    if not reference:
        return None
    if is_url(results_path):
        print(f"--reference: the comparison page is written for local results only; make it with: jaxeval report "
              f"{results_path} --reference {reference} --out DIR")
        return None
    out = join(output_folder(flags.run), name + FOLDER_SUFFIX)
    page = build_report([results_path], out, benchmarks, reference=reference, resamples=flags.flag("bootstrap"),
                        seed=flags.flag("bootstrap_seed"), level=flags.flag("ci"))
    print(f"wrote {page}")
    return str(page)
