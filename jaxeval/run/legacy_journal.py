"""Journals of the previous run-name layout, continued under the new name.

Until the benchmarks had settings of their own (jaxeval/benchmarks/base.py), a run's config hash
covered every flag of every benchmark, and agent_bench's flags had no prefix. A run interrupted
under that layout has its journal at the old name; the first rerun with this version finds it by
the old hash (computed from the same settings, under their old names), checks its header, and
continues it under the new name, so a preempted run resumes across the upgrade. The old layout
is frozen here: flags added later are not part of it (they did not exist then).
"""

from __future__ import annotations

import hashlib
import json

from jaxeval.run.journal import JOURNAL_VERSION, _dumps as journal_line
from jaxeval.io.fs import open_fs, write_text_atomic

# the flags the old layout hashed, under their old names
OLD_AGENT_BENCH = {"data": "agent_bench_data", "sets": "agent_bench_sets", "lengths": "agent_bench_lengths",
                   "mode": "agent_bench_mode", "reference_scores": "agent_bench_reference_scores"}
OLD_SHARED = ("attention", "config_overrides", "dtype", "limit", "mesh", "prefill_chunk", "seed", "tasks")
OLD_BENCHMARK_FLAGS = (
    "longbench_data",
    "longbench_pro_data", "longbench_pro_mode", "longbench_pro_model_type", "longbench_pro_runs",
    "longbench_pro_truncation_length", "longbench_pro_truncation_tokenizer", "longbench_pro_max_new_tokens",
    "longbench_pro_temperature", "longbench_pro_top_p", "longbench_pro_chat_format",
    "longbench_pro_embedding_model", "longbench_pro_semsim_backend", "longbench_pro_embedding_dtype",
    "longbench_pro_rouge_recursion",
    "helmet_data", "helmet_categories", "helmet_lengths", "helmet_llama2_tokenizer", "helmet_no_chat_template",
    "helmet_seed", "helmet_agenticlu_temperature", "helmet_agenticlu_generation_max_length", "helmet_judge",
    "helmet_judge_key_env", "helmet_judge_max_tokens", "helmet_nli_judge", "helmet_agenticlu_prompt",
)


def old_config_hash(flag_values: dict, tasks: list[str]) -> str | None:
    """The config hash the old layout gave these settings ({flag dest: value}, RunFlags.values());
    None when one of its flags is gone."""
    from jaxeval.run.config import parse_model_args

    values = dict(flag_values, tasks=list(tasks), model_args=parse_model_args(flag_values.get("model_args")))
    names = {**{name: name for name in OLD_SHARED + OLD_BENCHMARK_FLAGS}, **OLD_AGENT_BENCH}
    if any(now not in values for now in names.values()):
        return None
    hashed = json.loads(json.dumps({old: values[now] for old, now in names.items()}, default=str))
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


def continue_old_journal(old_path: str, old_identity: dict, new_path: str, new_identity: dict) -> str | None:
    """Move the journal at old_path, when its header is old_identity, to new_path under the new
    header (atomically: the new file complete, then the old one removed); a note, or None when
    there is nothing to continue (no such file, another run's, or a journal at new_path already)."""
    old_fs, old_fs_path = open_fs(old_path)
    new_fs, new_fs_path = open_fs(new_path)
    if new_fs.exists(new_fs_path) or not old_fs.exists(old_fs_path):
        return None
    with old_fs.open(old_fs_path, "rb") as f:
        header, _, entries = f.read().decode("utf-8").partition("\n")
    try:
        parsed = json.loads(header)
    except ValueError:
        return None
    if parsed != json.loads(journal_line({"jaxeval_journal": JOURNAL_VERSION, "identity": old_identity})):
        return None
    new_header = journal_line({"jaxeval_journal": JOURNAL_VERSION, "identity": new_identity})
    write_text_atomic(new_path, new_header + "\n" + entries)
    old_fs.rm(old_fs_path)
    return f"continuing the journal of the previous run-name layout {old_path} as {new_path}"
