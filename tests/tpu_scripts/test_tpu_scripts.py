"""tpu_scripts/ against a fake gcloud (fake_cloud.py): the commands they issue, in order, and
what every (fake) worker is made to run, through create, setup, run, preemption and relaunch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fake_cloud import WORKERS, calls, make_cloud, worker_log

SCRIPTS = Path(__file__).resolve().parents[2] / "tpu_scripts"
LOCATION = ["--zone=us-central2-b", "--project=proj"]
SSH = ["compute", "tpus", "tpu-vm", "ssh", "eval", *LOCATION, "--worker=all", "--strict-host-key-checking=no",
       "--ssh-flag=-oServerAliveInterval=60"]
RUN_ARGS = "--tasks agent_bench,longbench_e --limit 2 --model_args 'dtype=bfloat16,attention=splash'"
JAXEVAL_LINE = ("jaxeval run --tasks agent_bench,longbench_e --limit 2 --model_args dtype=bfloat16,attention=splash "
                "--output_path gs://bucket/evals JAXEVAL_DISTRIBUTED=1")


def _script(name: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPTS / name), *args], env=env, capture_output=True, text=True, timeout=60)


def _verbs(root: Path) -> list[str]:
    """Each gcloud call in short: 'describe', 'create', 'ssh:setup', 'ssh:run', ..."""
    short = []
    for argv in calls(root):
        verb = argv[3] if argv[:2] == ["compute", "tpus"] else " ".join(argv[:2])
        if verb == "ssh":
            command = next(a for a in argv if a.startswith("--command="))
            verb += ":run" if "jaxeval run" in command else ":setup"
        short.append(verb)
    return short


@pytest.fixture
def wheel(tmp_path) -> Path:
    path = tmp_path / "dist" / "jaxeval-0.1.0-py3-none-any.whl"
    path.parent.mkdir()
    path.write_bytes(b"not really a wheel")
    return path


def test_create_queued_resource_waits_until_active(tmp_path):
    root = tmp_path / "cloud"
    env = make_cloud(root, queued=True)
    done = _script("create.sh", env, "ACCELERATOR_TYPE=v5litepod-16")
    assert done.returncode == 0, done.stderr
    assert calls(root)[1] == ["compute", "tpus", "queued-resources", "create", "eval-qr", "--node-id=eval", *LOCATION,
                              "--accelerator-type=v5litepod-16", "--runtime-version=v2-alpha-tpuv5-lite", "--spot"]
    assert _verbs(root) == ["describe", "create", "describe", "describe", "describe"]  # waiting, provisioning, active
    assert (root / "state").read_text() == "ACTIVE"


def test_create_tpu_vm_with_a_reservation(tmp_path):
    root = tmp_path / "cloud"
    env = make_cloud(root, queued=False)
    assert _script("create.sh", env, "CAPACITY=reserved", "RUNTIME_VERSION=v2-alpha-tpuv6e").returncode == 0
    assert calls(root)[1] == ["compute", "tpus", "tpu-vm", "create", "eval", *LOCATION,
                              "--accelerator-type=v5litepod-8", "--version=v2-alpha-tpuv6e", "--reserved"]
    done = _script("create.sh", env, "CAPACITY=best-effort")  # a queued-resource-only capacity
    assert done.returncode == 2 and "CAPACITY 'best-effort' is not available with TPU_MODE=vm" in done.stderr


def test_setup_copies_the_wheel_and_installs_on_every_worker(tmp_path, wheel):
    root = tmp_path / "cloud"
    env = make_cloud(root)
    assert _script("create.sh", env).returncode == 0
    done = _script("setup.sh", env, f"JAXEVAL_WHEEL={wheel}")
    assert done.returncode == 0, done.stderr
    assert calls(root)[-2] == ["compute", "tpus", "tpu-vm", "scp", str(wheel), "eval:", *LOCATION, "--worker=all",
                               "--strict-host-key-checking=no"]
    assert calls(root)[-1][:len(SSH)] == SSH
    for worker in range(WORKERS):
        home = root / "workers" / f"w{worker}"
        assert worker_log(root, worker) == [
            "python3 -m pip install --quiet --user --upgrade uv",
            f"uv venv --allow-existing --python 3.11 {home}/jaxeval-venv",
            f"uv pip install --python {home}/jaxeval-venv/bin/python jax[tpu] gcsfs {home}/{wheel.name}",
            "venv-python -c import jax, jaxeval; print(\"jax\", jax.__version__, \"jaxeval\", jaxeval.__version__)"]
        assert (home / wheel.name).read_bytes() == wheel.read_bytes()
    assert _script("setup.sh", env).returncode == 0  # JAXEVAL_SOURCE=local: builds a wheel of the checkout
    (built,) = (root / "local_python3.log").read_text().splitlines()
    assert built.startswith("-m pip wheel --quiet --no-deps --wheel-dir ") and built.endswith("tpu_scripts/..")
    assert calls(root)[-2][4].endswith("/jaxeval-0.1.0-py3-none-any.whl") and calls(root)[-2][4] != str(wheel)


def test_setup_from_a_gs_wheel_or_a_requirement(tmp_path):
    root = tmp_path / "cloud"
    env = make_cloud(root)
    assert _script("create.sh", env).returncode == 0
    assert _script("setup.sh", env, "JAXEVAL_SOURCE=gs://bucket/wheels/jaxeval-0.1.0-py3-none-any.whl").returncode == 0
    assert [argv for argv in calls(root) if argv[:2] == ["storage", "cp"]] == [
        ["storage", "cp", "gs://bucket/wheels/jaxeval-0.1.0-py3-none-any.whl", f"{root}/workers/w{w}/"]
        for w in range(WORKERS)]
    assert _script("setup.sh", env, "JAXEVAL_SOURCE=jaxeval @ git+https://example.com/jaxeval@abc123").returncode == 0
    assert worker_log(root)[-2].endswith("jax[tpu] gcsfs jaxeval @ git+https://example.com/jaxeval@abc123")
    done = _script("setup.sh", env, "JAXEVAL_SOURCE=gs://bucket/wheels/")
    assert done.returncode == 2 and "a gs:// source must be a .whl file" in done.stderr


def test_run_launches_the_same_command_on_all_workers(tmp_path):
    root = tmp_path / "cloud"
    env = make_cloud(root)
    assert _script("create.sh", env).returncode == 0
    assert _script("setup.sh", env, "JAXEVAL_SOURCE=jaxeval").returncode == 0
    done = _script("run.sh", env, "OUTPUT_PATH=gs://bucket/evals", f"JAXEVAL_ARGS={RUN_ARGS}")
    assert done.returncode == 0, done.stderr
    assert calls(root)[-1][:len(SSH)] == SSH
    for worker in range(WORKERS):
        assert worker_log(root, worker)[-1] == JAXEVAL_LINE
        assert (root / "workers" / f"w{worker}" / "jaxeval-run.log").exists()  # the output is kept on the worker
    missing = _script("run.sh", env)
    assert missing.returncode == 2 and "OUTPUT_PATH is not set" in missing.stderr


@pytest.mark.parametrize("queued, preempted", [(True, "SUSPENDED"), (False, "PREEMPTED")])
def test_babysit_recreates_after_preemption_and_reruns_the_same_command(tmp_path, queued, preempted):
    root = tmp_path / "cloud"
    env = make_cloud(root, run_codes=(143, 0), queued=queued)
    done = _script("babysit.sh", env, "OUTPUT_PATH=gs://bucket/evals", f"JAXEVAL_ARGS={RUN_ARGS}",
                   "JAXEVAL_SOURCE=jaxeval")
    assert done.returncode == 0, done.stderr
    waits = ["describe"] * (3 if queued else 2)  # until ACTIVE / READY
    assert _verbs(root) == ["describe", "create", *waits, "ssh:setup", "ssh:run",  # first launch, preempted (143)
                            "describe", "delete", "create", *waits, "ssh:setup", "ssh:run"]  # relaunch, done
    assert f"is {preempted}" in done.stderr and "suite finished" in done.stderr
    delete = calls(root)[-len(waits) - 4]
    assert delete[:4] == ["compute", "tpus", "queued-resources" if queued else "tpu-vm", "delete"]
    for worker in range(WORKERS):
        runs = [line for line in worker_log(root, worker) if line.startswith("jaxeval ")]
        assert runs == [JAXEVAL_LINE, JAXEVAL_LINE]  # the same command: the journal resumes


def test_babysit_stops_on_a_user_error_and_retries_a_dropped_connection(tmp_path):
    root = tmp_path / "cloud"
    env = make_cloud(root, run_codes=(255, 2))
    (root / "state").write_text("ACTIVE")
    done = _script("babysit.sh", env, "OUTPUT_PATH=gs://b/r", "JAXEVAL_SOURCE=jaxeval")
    assert done.returncode == 2 and "not retrying" in done.stderr
    assert _verbs(root) == ["describe", "ssh:setup", "ssh:run", "describe", "ssh:run"]  # setup once: still ACTIVE
    capped = make_cloud(tmp_path / "capped", run_codes=(1, 1, 1))
    (tmp_path / "capped" / "state").write_text("READY")
    gave_up = _script("babysit.sh", {**capped, "TPU_MODE": "vm"}, "OUTPUT_PATH=gs://b/r", "MAX_ATTEMPTS=2",
                      "SKIP_SETUP=1")
    assert gave_up.returncode == 2 and "gave up after 2 attempts" in gave_up.stderr
    assert _verbs(tmp_path / "capped") == ["describe", "ssh:run", "describe", "ssh:run"]


def test_teardown_deletes_only_what_exists(tmp_path):
    root = tmp_path / "cloud"
    env = make_cloud(root)
    assert "nothing to delete" in _script("teardown.sh", env).stderr
    (root / "state").write_text("ACTIVE")
    assert _script("teardown.sh", env).returncode == 0
    assert calls(root)[-1] == ["compute", "tpus", "queued-resources", "delete", "eval-qr", *LOCATION,
                               "--force", "--quiet"]
    assert _script("teardown.sh", {k: v for k, v in env.items() if k != "PROJECT"}).returncode == 2


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)")
def test_scripts_are_shellcheck_clean():
    done = subprocess.run(["shellcheck", "-x", *sorted(map(str, SCRIPTS.glob("*.sh")))], cwd=SCRIPTS,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
