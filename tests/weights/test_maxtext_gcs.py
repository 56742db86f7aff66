"""gs:// against a real GCS JSON API on loopback: a MaxText training step uploaded to a local emulator
(gcp-storage-emulator from the registry), found through jaxeval's fsspec opener (gcsfs) and restored by
Orbax/TensorStore straight from the bucket, read equal to the same checkpoint on local disk.

The clients are pointed at the emulator the documented ways: STORAGE_EMULATOR_HOST (gcsfs),
TENSORSTORE_GCS_HTTP_URL (TensorStore's gcs driver) and GOOGLE_AUTH_TOKEN_FOR_TESTING (TensorStore's testing
token: no credential lookup, no metadata server). Skipped without gcsfs (jaxeval[gcs]) or the emulator
(`pip install gcp-storage-emulator`, or JAXEVAL_GCS_EMULATOR=path/to/gcp-storage-emulator).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

import jaxeval
from tests.models.conftest import hf_llama_tensors
from tests.weights import maxtext_fixtures as mf
from tests.weights.test_maxtext_read import LLAMA31, LLAMA_ARGS

pytest.importorskip("gcsfs")
EMULATOR = os.environ.get("JAXEVAL_GCS_EMULATOR") or shutil.which("gcp-storage-emulator")
pytestmark = pytest.mark.skipif(not EMULATOR, reason="no gcp-storage-emulator (pip install gcp-storage-emulator, "
                                                     "or JAXEVAL_GCS_EMULATOR=PATH)")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("gcs") / "emulator.log"
    with open(log, "w") as out:
        server = subprocess.Popen([EMULATOR, "start", "--host=127.0.0.1", f"--port={port}", "--in-memory"],
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/storage/v1/b", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail(f"the GCS emulator did not start: {log.read_text()[-2000:]}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


# The bucket side runs in a process started with the emulator's environment, as a user's would be: gcsfs reads
# GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT when imported (its gRPC bucket-type probe, which the emulator does not serve,
# costs 60 s a bucket), fsspec reads FSSPEC_GS_TOKEN=anon when imported (no credential search, which would wait on
# a metadata server), TensorStore reads its two variables once.
REMOTE = """
import sys, fsspec, numpy as np, jaxeval
local, args, out = sys.argv[1:4]
fs = fsspec.filesystem("gs")
fs.mkdir("jaxeval-test")
fs.put(local, "jaxeval-test/runs/r1/checkpoints/2", recursive=True)
model = jaxeval.load_model("gs://jaxeval-test/runs/r1/checkpoints/2", dtype="float32", load_tokenizer=False,
                           maxtext_config=args)
ids = np.load(out)
np.save(out, np.asarray(model.read(ids, np.arange(1, len(ids)), ids[1:]).logprobs))
"""


def test_training_step_in_a_bucket_reads_equal_to_local(emulator, tmp_path):
    tensors = hf_llama_tensors(LLAMA31)
    local = tmp_path / "run/checkpoints/2"
    mf.save_items(local / "items", mf.training_state(mf.maxtext_params(tensors, LLAMA31, "llama31", scanned=True)))
    ids = np.random.default_rng(0).integers(0, LLAMA31["vocab_size"], 48)
    np.save(tmp_path / "read.npy", ids)
    env = {**os.environ, "STORAGE_EMULATOR_HOST": emulator, "TENSORSTORE_GCS_HTTP_URL": emulator,
           "GOOGLE_AUTH_TOKEN_FOR_TESTING": "testing", "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
           "FSSPEC_GS_TOKEN": "anon", "JAX_PLATFORMS": "cpu"}
    run = subprocess.run([sys.executable, "-c", REMOTE, str(local), LLAMA_ARGS, str(tmp_path / "read.npy")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    disk = jaxeval.load_model(local, dtype="float32", load_tokenizer=False, maxtext_config=LLAMA_ARGS)
    np.testing.assert_array_equal(np.load(tmp_path / "read.npy"),
                                  np.asarray(disk.read(ids, np.arange(1, 48), ids[1:]).logprobs))
