"""jaxeval.evaluate on a mesh: arrays a training loop laid out as jaxeval's rules would are used in place,
arrays of another mesh are re-sharded device to device, and the scores agree with one device."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a 4-device subprocess compiling for three layouts: about 100 s on 2 shared cores
def test_live_parameters_on_a_mesh_stay_where_they_are():
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXEVAL_")}
    env |= {"XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(Path(__file__).parent / "live_mesh_worker.py")], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["one_device"]["live"] == {"resharded": 0, "mesh": None}
    assert out["jaxeval_mesh"]["live"]["resharded"] == 0 and out["jaxeval_mesh"]["live"]["mesh"]["tensor"] == 2
    assert out["jaxeval_mesh_again"]["compiles"] == out["jaxeval_mesh"]["compiles"]  # nothing new compiled
    assert out["foreign_mesh"]["live"]["resharded"] > 0
    for label in ("jaxeval_mesh", "foreign_mesh"):
        assert out[label]["score"] == pytest.approx(out["one_device"]["score"], abs=1e-3)
