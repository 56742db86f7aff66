"""A fast, deterministic `jaxeval run` for kill-and-resume tests: the real CLI, run flow, journal
and results writer, with a model-free benchmark "synthetic" whose samples take a few ms each.

    python synthetic_job.py [jaxeval run flags...]      (run from the folder the outputs go under)
"""

from __future__ import annotations

import math
import os
import sys
import time
import types
from pathlib import Path

SAMPLES = 48
SECONDS_PER_SAMPLE = float(os.environ.get("SYNTHETIC_SECONDS_PER_SAMPLE", 0.02))
LOAD_SECONDS = float(os.environ.get("SYNTHETIC_LOAD_SECONDS", 0))  # a slow model load (signal tests)


def run_task(ctx, settings):
    from jaxeval.run.resumable import map_journaled

    def compute(batch):
        time.sleep(SECONDS_PER_SAMPLE * len(batch))
        # depends on the batch's company, as padded generation may: resuming must recompute whole batches
        return [{"value": math.sin(i) / 3 + 1e-3 * batch[0], "i": i} for i in batch]

    keys = [f"synthetic/main/all/item-{i:03d}/0" for i in range(SAMPLES)]
    records = map_journaled(ctx.journal, keys, compute, batch_size=ctx.batch_size, desc="synthetic")
    values = [r["value"] for r in records]
    result = {"mean": sum(values) / len(values), "n": len(values),
              "sample_log": [{"key": k, **r} for k, r in zip(keys, records)]}
    return result, f"mean {result['mean']:.6f}"


def summarize(task, result):
    return {"results": {"synthetic/main": {"mean": result["mean"]}},
            "n-samples": {"synthetic/main": {"original": SAMPLES, "effective": result["n"]}},
            "higher_is_better": {"synthetic/main": {"mean": True}}, "versions": "1"}


class FakeModel:
    path, dtype, fingerprint, attention, tokenizer = "synthetic-model", "float32", "f" * 16, "none", None
    config = types.SimpleNamespace(model_type="synthetic")

    def __init__(self):
        self.stats = {"reads": 0, "tokens": 0}
        time.sleep(LOAD_SECONDS)


def install(setattr_=setattr, model=FakeModel):
    """Register the synthetic benchmark and the fake model loader (pass monkeypatch.setattr in tests)."""
    from jaxeval import cli
    from jaxeval.benchmarks import registry

    import dataclasses

    from jaxeval.benchmarks.base import Benchmark

    @dataclasses.dataclass(frozen=True)
    class NoSettings:
        pass

    class Synthetic(Benchmark):
        name, tasks, Settings = "synthetic", ("synthetic",), NoSettings

        def run(self, ctx, settings):
            return run_task(ctx, settings)

        def summarize(self, task, result):
            return summarize(task, result)

    module = types.ModuleType("synthetic_benchmark")
    module.BENCHMARK = Synthetic()
    sys.modules["synthetic_benchmark"] = module
    setattr_(registry, "BENCHMARK_MODULES", (*registry.BENCHMARK_MODULES, "synthetic_benchmark"))
    setattr_(cli, "_load", lambda args: model())


def main(argv):
    from jaxeval import cli

    from jaxeval.engine.distributed import initialize_distributed

    initialize_distributed()  # multi-host tests: JAXEVAL_COORDINATOR, JAXEVAL_NUM_PROCESSES, JAXEVAL_PROCESS_ID
    if "SYNTHETIC_CHUNK_BYTES" in os.environ:  # gather records in many small pieces
        from jaxeval.run import multihost

        multihost.CHUNK_BYTES = int(os.environ["SYNTHETIC_CHUNK_BYTES"])
    install()
    return cli.main(["run", "--model", "synthetic-model", "--tasks", "synthetic", *argv], exit_process=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main(sys.argv[1:]))
