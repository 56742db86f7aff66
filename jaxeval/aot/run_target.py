"""`jaxeval run --target TARGET`: the run sized for an accelerator by compiling its programs for it.

With --batch_size auto[:N] and/or --mesh auto, `jaxeval compile TARGET --tasks <the run's tasks>`
(jaxeval/aot/command.py) finds the largest batch and a mesh whose programs compile and fit the
target's HBM, and the run uses them. The choice, the target and each program's peak per chip are
recorded in the results' config as `target_choice` (not hashed: they change no number, so a rerun
resumes the same journal). The programs are compiled for the dtype the run has on the target
(auto: bfloat16) and with the run's attention backend and prefill chunk.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from jaxeval.errors import ConfigError


def add_target_argument(p: argparse.ArgumentParser) -> None:
    from jaxeval.aot.targets import TARGETS

    p.add_argument("--target", default=None, metavar="TARGET",
                   help=f"size the run for this accelerator ({', '.join(TARGETS)}): --batch_size auto[:N] and --mesh "
                        "auto take the largest batch and a mesh whose programs compile and fit it (jaxeval compile; "
                        "docs/compile.md), recorded as target_choice")


def resolve_target(flags, tasks: list[str]):
    """With --target: compile the run's programs for it -> the RunFlags (jaxeval.options.flags) with
    batch_size / mesh set to what fits (where they are auto) and the record in extra["target_choice"];
    the flags unchanged without --target."""
    from jaxeval.aot import command, targets
    from jaxeval.plan.batch import auto_cap

    name = flags.flag("target")
    if not name:
        return flags
    targets.target(name)  # an unknown target: one line naming the known ones
    batch_size, mesh = flags.run.batch_size, flags.model.mesh
    batch_auto, mesh_auto = auto_cap(batch_size) is not None, mesh == "auto"
    if not (batch_auto or mesh_auto):
        raise ConfigError(f"--target {name}: give --batch_size auto[:N] and/or --mesh auto, what the compile "
                          "for the target chooses")
    kv = flags.model.kv_cache or "exact"
    laid_out = command.COMPILE_CHOICES["kv_cache"]  # the KV-cache policies jaxeval compile lays out
    if kv not in laid_out:
        raise ConfigError(f"--target {name}: --kv_cache {kv} is not compiled ahead of time (only {', '.join(laid_out)})")
    targets.prepare_environment(host_cpu=False)  # this run's own devices are this machine's
    dtype = flags.model.dtype
    print(f"--target {name}: compiling the run's programs for it", file=sys.stderr, flush=True)
    report = command.report_for(flags.values() | dict(
        target=name, lengths=None, tasks=",".join(tasks), new_tokens=0, read_positions=8, out=None, hlo_dir=None,
        batch_size=str(batch_size), mesh=mesh if mesh else "none", kv_cache=kv,
        dtype="bfloat16" if dtype == "auto" else dtype))
    if not report["fits"]:
        raise ConfigError(report["verdict"])
    choice = {"target": name, "chips": report["chips"], "hbm_bytes_per_chip": report["hbm_bytes_per_chip"],
              "batch_size": report["batch_size"], "mesh": report["mesh_spec"], "dtype": report["dtype"],
              "attention": report["attention"], "batch_search": report["batch_search"],
              "asked": {"batch_size": str(batch_size), "mesh": mesh},
              "programs": [{"name": p["name"], "peak_bytes_per_chip": p["peak_bytes_per_chip"], "fits": p["fits"]}
                           for p in report["programs"]]}
    if batch_auto:
        flags = flags.with_run(batch_size=report["batch_size"])
    if mesh_auto:
        flags = flags.with_model(mesh=report["mesh_spec"])
    print(f"--target {name}: batch size {report['batch_size']}, mesh {report['mesh']} (largest peak "
          f"{max(p['peak_bytes_per_chip'] for p in report['programs']) / 2 ** 30:.2f} of "
          f"{report['hbm_bytes_per_chip'] / 2 ** 30:.2f} GiB per chip)", file=sys.stderr)
    return dataclasses.replace(flags, extra={**flags.extra, "target_choice": choice})
