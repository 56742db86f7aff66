"""RunOptions: what `jaxeval run` (and validate, plan, `jaxeval.evaluate`) does with a model,
declared once: the flags (lm-eval's names), the run config YAML keys, the recorded config and
which of them the config hash leaves out (hashed=False: where the output goes, how it is
journaled or batched, what is logged: nothing that changes a number).

The judges' flags (jaxeval.judges.options), the plan's (jaxeval.plan.options), --reference's
(jaxeval.report.build) and each benchmark's Settings are declared beside what reads them.
"""

from __future__ import annotations

import argparse
import dataclasses

from jaxeval.options.settings import setting, values_of


def parse_limit(text) -> int | float:
    """--limit as lm-eval reads it: an integer (the first N items) or a fraction 0 < f < 1."""
    value = str(text).strip()
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer or a fraction, got {text!r}") from None


def parse_batch_size(text) -> int | str:
    """--batch_size: an integer (the run checks it is positive), auto, or auto:N (N a positive integer)."""
    value = str(text).strip()
    if value == "auto" or (value.startswith("auto:") and value[5:].isdigit() and int(value[5:]) >= 1):
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, auto or auto:N, got {text!r}") from None


@dataclasses.dataclass(frozen=True)
class RunOptions:
    model_args: str | None = setting(None, "k=v,... for the model flags (dtype, attention, prefill_chunk, "
                                     "pretrained=PATH), which they override, and config.json fields to replace "
                                     "(rope_scaling={...JSON...}, max_position_embeddings=N, ...: recorded and hashed "
                                     "into the run)", hashed=False)
    tasks: str = setting("agent_bench", "comma-separated (`jaxeval ls`)")
    limit: int | float | None = setting(None, "first N items per config and length; 0 < N < 1: that fraction of "
                                        "each, rounded up (lm-eval)", parse=parse_limit)
    batch_size: int | str = setting(8, "prompts generated together (agent_bench: texts read together, on "
                                    "accelerators; on CPU one per step, which measured faster), one length bucket "
                                    "per batch; auto: the most whose KV cache at the run's longest length fits in "
                                    "device memory (CPU: host memory) beside the weights, at most 64; auto:N: at "
                                    "most N", parse=parse_batch_size, hashed=False)
    seed: int = setting(0, "seed of anything sampled (recorded in the results)")
    output_path: str = setting("results", "folder (local, gs://, any fsspec URL) for results, journal and samples",
                               hashed=False)
    out: str | None = setting(None, "exact results file (overrides --output_path for it)", hashed=False)
    gen_kwargs: str | None = setting(None, "lm-eval's generation settings over each benchmark's own: temperature, "
                                     "top_p, do_sample, max_gen_toks (= max_new_tokens, replacing the per-dataset "
                                     "budget), until (stop strings), as k=v,... (until=[\"\\n\"]) or JSON; hashed "
                                     "into the run, listed in deviations")
    log_samples: bool = setting(False, "also write one JSONL line per sample (the prompt's sha256 and length in "
                                "tokens, the target, the raw output, the scores)", hashed=False)
    log_samples_prompts: bool = setting(False, "--log_samples with each prompt's full text in its line (large at "
                                        "long context)", hashed=False)
    config: str | None = setting(None, "run config YAML: keys mirror these flags; flags win", hashed=False)
    journal_mode: str = setting("resume", "resume: reuse the run's journal, refusing a damaged one; recover: keep "
                                "every intact line of a damaged journal (and say how many were dropped)",
                                choices=("resume", "recover"), flag="journal", hashed=False)
    host_split: str = setting("auto", "multi-host: each process computes its share of the samples (auto: unless the "
                              "--mesh spans hosts, when every process must run every sample)",
                              choices=("auto", "on", "off"), hashed=False)
    steps: str | None = setting(None, "--model is a training run's checkpoint folder (RUN/checkpoints): score each "
                                "committed step it selects, one results file per step and a series file "
                                "(jaxeval/series.py)", metavar="{all,latest,every:N,STEP,...}", hashed=False)
    watch: bool = setting(False, "with --steps: wait for new steps as they are committed", hashed=False)
    watch_poll: float = setting(30.0, "--watch: seconds between looks (0.1 to 600)", hashed=False)
    watch_max_wait: float = setting(3600.0, "--watch: stop when no new step has been committed for this many "
                                    "seconds", hashed=False)
    tensorboard: str | None = setting(None, "with --steps: write each step's scores to DIR as TensorBoard scalars at "
                                      "their step", metavar="DIR", hashed=False)

    @classmethod
    def of(cls, values) -> "RunOptions":
        """The options held by a parsed namespace or a mapping of flag values."""
        return values_of(cls, values)

    def task_list(self) -> list[str]:
        return [task.strip() for task in self.tasks.split(",") if task.strip()]

    def replace(self, **changes) -> "RunOptions":
        return dataclasses.replace(self, **changes)
