"""The registry's optional hooks for HELMET: describe() for `jaxeval ls`, summarize() for the
results JSON sections (docs/results_schema.md), validate() for `jaxeval validate`."""

from __future__ import annotations

from jaxeval.benchmarks.helmet.tasks import CATEGORIES, LENGTHS, dataset_key

VERSION = "1"
DEVIATIONS = [
    "no newline stop (as the published runs: the configs' stop_new_line never reached HELMET's model)",
    "LongQA/summarisation/ICL rows are read from prepared JSONL files (prepare_hub.py builds them as "
    "upstream; NarrativeQA / Multi-LexSum demos are seeded per item, upstream's shuffle is unseeded)",
    "ALCE sentence splitting falls back to untrained punkt when nltk's punkt_tab data is not installed",
    "ALCE: jaxeval's own runs keep only the shown docs with each output, so a citation beyond them is out of "
    "range; upstream (and jaxeval re-scoring HELMET's files) checks it against the full retrieved list",
]
AGENTICLU_DEVIATIONS = [
    "HELMET prompts with AgenticLU's settings (0 shots, 1024 tokens, temperature 0.6); the multi-turn "
    "agent loop is not run (its turn prompts are not available verbatim)",
    "binary judge: the card's correctness form unless --helmet_agenticlu_prompt gives the paper's wording",
]


def describe() -> dict:
    lengths = [v for v in LENGTHS.values() if v != "4k"]
    return {"helmet": {"about": "HELMET: recall, RAG, re-rank, citation, LongQA, summarisation, ICL "
                                "(judges for NarrativeQA / summarisation; NLI judge for citations)",
                       "configs": list(CATEGORIES), "lengths": lengths},
            "helmet_agenticlu": {"about": "AgenticLU subset of HELMET: RAG + LongQA accuracy by a binary judge",
                                 "configs": ["rag", "longqa"], "lengths": lengths}}


def _stderrs(averages: dict, records: list[dict] | None) -> dict:
    """<metric>_stderr for each averaged metric whose per-item values the records hold (their mean,
    in the average's scale, is the average: otherwise the records hold another quantity and no
    stderr is given); lengths and counts get none."""
    from jaxeval.run.lm_eval_view import stderr

    out = {}
    for name, average in averages.items():
        if "_len" in name or name in ("num_preds", "length") or not isinstance(average, float) or not records:
            continue
        values = [float(r[name]) for r in records if isinstance(r.get(name), (int, float))]  # bools: 0 / 1
        if values and abs(100.0 * sum(values) / len(values) - average) <= 1e-6 * max(1.0, abs(average)):
            out[f"{name}_stderr"] = stderr(values, 100.0)
    return out


def summarize(task: str, result: dict) -> dict:
    results, hib, n_samples, lengths, truncated = {}, {}, {}, {}, {}
    for unit in result["units"]:
        leaf = f"{task}/{unit['dataset']}/{unit['length']}"
        results[leaf] = {k: v for k, v in unit["averaged_metrics"].items()}
        results[leaf].update(_stderrs(results[leaf], (result.get("outputs") or {}).get(f"{unit['dataset']}/{unit['length']}")))
        hib[leaf] = {k: "_len" not in k and k != "num_preds" for k in results[leaf] if not k.endswith("_stderr")}
        n_samples[leaf] = {"original": unit["notes"].get("samples_before_limit"), "effective": unit["samples"]}
        lengths[leaf] = unit["length"]
        truncated[f"{unit['dataset']}/{unit['length']}"] = unit["notes"].get("truncated", 0)
    summary = {"results": results, "higher_is_better": hib, "n-samples": n_samples, "lengths": lengths,
               "versions": VERSION, "truncation": {"policy": "context tail by the model tokenizer to L - G",
                                                   "truncated": truncated},
               "deviations": AGENTICLU_DEVIATIONS if result["benchmark"] == "agenticlu" else DEVIATIONS,
               "judge": {"judge": result.get("judge"), "nli": result.get("nli_judge"),
                         "max_tokens_sent": {f"{unit['dataset']}/{unit['length']}": summary["max_tokens_sent"]
                                             for unit in result["units"] for summary in (unit.get("judge") or {}).values()
                                             if "max_tokens_sent" in summary}},
               "configs": {"generation": result.get("generation"), "data": result.get("data"),
                           "limit": result.get("limit")}}
    if "accuracy_table" in result:
        summary["groups"] = {f"{name}/{length}": value for name, row in result["accuracy_table"].items()
                             for length, value in row.items()}
        summary["headline"] = [{"row": f"{name} accuracy at {length}", "value": value, "metric": "accuracy",
                                "subtask": f"{task}/{name}/{length}"}
                               for name, row in result["accuracy_table"].items() for length, value in row.items()]
    else:
        groups, headline = {}, []
        for length, row in result["collect"].items():
            for cat, value in row["categories"].items():
                groups[f"{length}/{cat}"] = value["score"] if value["complete"] else None
            groups[f"{length}/overall"] = row["overall"]
            headline.append({"row": f"HELMET overall at {length}", "value": row["overall"], "metric": "overall"})
        summary["groups"], summary["headline"] = groups, headline
    chat = sorted({dataset_key(u["dataset"]) for u in result["units"] if u["chat_template"]})
    summary["chat_template"] = f"chat template for {', '.join(chat)}; completion for the rest" if chat else "completion"
    return summary

