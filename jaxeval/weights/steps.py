"""A training run's checkpoint steps: which step folders are committed, and which a --steps selection picks.

A run's checkpoint folder holds one folder per step, named by the step number (Orbax's
CheckpointManager, MaxText's RUN/checkpoints/<step>/items, jaxeval's own layout per step) or run-<step>
(EasyDeL's Trainer, whose step folders read with --mapping easydel).
Orbax commits a step in one of two ways (orbax/checkpoint/_src/path/atomicity.py):
  - atomic rename (its default on local disks): the step is written as
    `<step>.orbax-checkpoint-tmp-<timestamp>` (an item inside as `<item>.orbax-checkpoint-tmp-...`)
    and renamed to `<step>` when complete;
  - a commit file (object stores such as gs://, where rename is not atomic): the folder is `<step>`
    from the start and `commit_success.txt` appears in it when complete.
So a step is committed when its name is a number, nothing in it still carries the temporary suffix,
and, where the run's steps use commit files (any step has one, or the run is on an object store), it
has its own. A step that is not committed is never read: it is picked up once it is.
"""

from __future__ import annotations

import re
from pathlib import Path

from jaxeval.errors import ConfigError

TMP_SUFFIX = ".orbax-checkpoint-tmp"  # orbax atomicity_types.TMP_DIR_SUFFIX
COMMIT_FILE = "commit_success.txt"  # orbax atomicity_types.COMMIT_SUCCESS_FILE
_STEP = re.compile(r"(?:run-)?(\d+)")  # <step> (Orbax, MaxText, jaxeval) or run-<step> (EasyDeL's Trainer)


def parse_steps(text: str) -> tuple[str, object]:
    """--steps: "all", "latest", "every:N" or "1000,2000" -> (kind, argument); one clear line otherwise."""
    value = str(text).strip()
    if value in ("all", "latest"):
        return value, None
    if value.startswith("every:"):
        n = value[len("every:"):]
        if n.isdigit() and int(n) > 0:
            return "every", int(n)
        raise ConfigError(f"--steps {text}: every:N needs a positive integer N")
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if parts and all(p.isdigit() for p in parts):
        return "list", tuple(sorted({int(p) for p in parts}))
    raise ConfigError(f"--steps {text!r}: expected all, latest, every:N or a comma-separated list of steps "
                      "(1000,2000)")


def step_folders(run: Path) -> dict[int, Path]:
    """Every step folder of a run's checkpoint folder, committed or not: step -> folder."""
    return {int(m.group(1)): p for p in run.iterdir() if p.is_dir() and (m := _STEP.fullmatch(p.name))}


def uses_commit_files(run: Path) -> bool:
    return any((p / COMMIT_FILE).is_file() for p in step_folders(run).values())


def is_committed(folder: Path, commit_files: bool) -> bool:
    """Whether the step folder is complete by Orbax's convention (see the module docstring)."""
    if any(TMP_SUFFIX in child.name for child in folder.iterdir()):
        return False
    return (folder / COMMIT_FILE).is_file() if commit_files else True


def committed_steps(run: Path) -> dict[int, Path]:
    """The run's committed steps, in step order."""
    commit_files = uses_commit_files(run)
    return {step: folder for step, folder in sorted(step_folders(run).items()) if is_committed(folder, commit_files)}


def pending_steps(run: Path) -> list[str]:
    """Names of the step folders still being written (for the progress line)."""
    commit_files = uses_commit_files(run)
    named = [p.name for p in run.iterdir() if p.is_dir() and TMP_SUFFIX in p.name]
    return sorted(named + [str(s) for s, f in step_folders(run).items() if not is_committed(f, commit_files)])


def step_model(folder: Path) -> Path:
    """What --model reads for one step: the step folder, or its `items` item where the step is an Orbax
    CheckpointManager step holding nothing else a model folder has (MaxText's RUN/checkpoints/<step>/items)."""
    if (folder / "items").is_dir() and not (folder / "config.json").is_file():
        return folder / "items"
    return folder


def select_steps(available: list[int], kind: str, argument) -> list[int]:
    """The committed steps --steps picks: all; the latest; every multiple of N; or those listed that exist."""
    if kind == "all":
        return list(available)
    if kind == "latest":
        return available[-1:]
    if kind == "every":
        return [s for s in available if s % argument == 0]
    return [s for s in available if s in argument]


def check_run_folder(path: str) -> Path:
    """The run's checkpoint folder for --steps: a local folder holding step folders (or, with --watch, none yet)."""
    run = Path(path)
    if not run.is_dir():
        raise ConfigError(f"--model {path}: with --steps, --model is a training run's checkpoint folder "
                          "(RUN/checkpoints, one folder per step); it is not a folder")
    return run
