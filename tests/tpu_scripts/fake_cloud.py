"""A fake `gcloud` and fake TPU workers for the tpu_scripts tests.

The fake gcloud records its argv (one JSON list per line in calls.jsonl) and keeps a TPU's
lifecycle in a state file: create -> CREATING -> READY (TPU VM) or WAITING_FOR_RESOURCES ->
PROVISIONING -> ACTIVE (queued resource), one step per describe; delete -> MISSING. `ssh
--worker=all --command=C` runs C with bash in every worker's home (workers/w0, w1), where
fake python3 / uv / venv / jaxeval record what they were asked; the worker's jaxeval exits
with the next code from run_codes, and 143 (SIGTERM) marks the TPU preempted, as a real
preemption would.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

WORKERS = 2

GCLOUD = r'''#!{python}
import json, os, shutil, subprocess, sys
from pathlib import Path

root = Path(os.environ["FAKE_CLOUD"])
argv = sys.argv[1:]
with open(root / "calls.jsonl", "a") as log:
    log.write(json.dumps(argv) + "\n")
words = [a for a in argv if not a.startswith("-")]
flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
state_file = root / "state"
state = state_file.read_text() if state_file.exists() else "MISSING"
queued = "queued-resources" in words
if words[:2] == ["storage", "cp"]:
    sys.exit(0)
verb = words[3]
if verb == "describe":
    if state == "MISSING":
        sys.exit("ERROR: (gcloud) NOT_FOUND")
    print(state)
    following = {{"CREATING": "READY", "WAITING_FOR_RESOURCES": "PROVISIONING", "PROVISIONING": "ACTIVE"}}
    state_file.write_text(following.get(state, state))
elif verb == "create":
    if state != "MISSING":
        sys.exit("ERROR: (gcloud) ALREADY_EXISTS")
    state_file.write_text("WAITING_FOR_RESOURCES" if queued else "CREATING")
elif verb == "delete":
    if state == "MISSING":
        sys.exit("ERROR: (gcloud) NOT_FOUND")
    state_file.write_text("MISSING")
elif verb == "scp":
    if state not in ("READY", "ACTIVE"):
        sys.exit(255)
    for home in sorted((root / "workers").iterdir()):
        shutil.copy(words[4], home)
elif verb == "ssh":
    if state not in ("READY", "ACTIVE"):
        sys.exit(255)
    env = dict(os.environ)
    if "jaxeval run" in flags["command"]:
        codes = (root / "run_codes").read_text().split()
        (root / "run_codes").write_text(" ".join(codes[1:]))
        env["FAKE_RUN_RC"] = codes[0] if codes else "0"
    worst = 0
    for home in sorted((root / "workers").iterdir()):
        env.update(HOME=str(home), PATH=f"{{home}}/bin:{{root}}/bin:/usr/bin:/bin")
        worst = max(worst, subprocess.run(["bash", "-c", flags["command"]], env=env, cwd=home).returncode)
    if env.get("FAKE_RUN_RC") == "143":
        state_file.write_text("SUSPENDED" if (root / "queued").exists() else "PREEMPTED")
    sys.exit(worst)
else:
    sys.exit(f"fake gcloud: unexpected {{argv}}")
'''

# On a worker: each tool appends "name args" to $HOME/calls.log.
PYTHON3 = r'''#!/bin/bash
echo "python3 $*" >> "$HOME/calls.log"
if [[ "$*" == "-m pip install --quiet --user --upgrade uv" ]]; then
  mkdir -p "$HOME/.local/bin" && cp "$FAKE_CLOUD/templates/uv" "$HOME/.local/bin/uv"
fi
'''
UV = r'''#!/bin/bash
echo "uv $*" >> "$HOME/calls.log"
if [[ $1 == venv ]]; then
  venv="${@: -1}"
  mkdir -p "$venv/bin" && cp "$FAKE_CLOUD/templates/python" "$FAKE_CLOUD/templates/jaxeval" "$venv/bin/"
fi
'''
VENV_PYTHON = r'''#!/bin/bash
echo "venv-python $*" >> "$HOME/calls.log"
echo "jax 0.0 jaxeval 0.0"
'''
JAXEVAL = r'''#!/bin/bash
echo "jaxeval $* JAXEVAL_DISTRIBUTED=${JAXEVAL_DISTRIBUTED:-}" >> "$HOME/calls.log"
exit "${FAKE_RUN_RC:-0}"
'''

# On this machine: `python3 -m pip wheel --quiet --no-deps --wheel-dir DIR SRC` leaves a wheel in DIR.
LOCAL_PYTHON3 = r'''#!/bin/bash
echo "$*" >> "$FAKE_CLOUD/local_python3.log"
touch "$7/jaxeval-0.1.0-py3-none-any.whl"
'''


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def make_cloud(root: Path, run_codes=(), queued: bool = True) -> dict[str, str]:
    """A fake cloud under root; returns the environment to run the scripts with."""
    _executable(root / "bin" / "gcloud", GCLOUD.format(python=sys.executable))
    _executable(root / "bin" / "python3", LOCAL_PYTHON3)
    for name, text in (("uv", UV), ("python", VENV_PYTHON), ("jaxeval", JAXEVAL)):
        _executable(root / "templates" / name, text)
    for index in range(WORKERS):
        _executable(root / "workers" / f"w{index}" / "bin" / "python3", PYTHON3)
    (root / "run_codes").write_text(" ".join(map(str, run_codes)))
    if queued:
        (root / "queued").touch()
    env = {key: value for key, value in os.environ.items()
           if key not in ("TPU_MODE", "CAPACITY", "JAXEVAL_ARGS", "OUTPUT_PATH", "JAXEVAL_SOURCE", "JAXEVAL_WHEEL")}
    env.update(FAKE_CLOUD=str(root), PATH=f"{root / 'bin'}:{os.environ['PATH']}", POLL_S="0",
               PROJECT="proj", ZONE="us-central2-b", TPU_NAME="eval", TPU_MODE="queued" if queued else "vm")
    return env


def calls(root: Path) -> list[list[str]]:
    path = root / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def worker_log(root: Path, worker: int = 0) -> list[str]:
    path = root / "workers" / f"w{worker}" / "calls.log"
    return path.read_text().splitlines() if path.exists() else []
