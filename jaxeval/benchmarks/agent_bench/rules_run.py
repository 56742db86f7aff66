"""Running the rules configs together: every distinct sequence read once, scores, reference.

All requested rules configs and lengths are planned at once, so a session's text without the
rule (shared by the items of one context and by the three language configs) is read once,
found by content. Backends that share prefixes (read_many) also reuse the KV cache of the prefix
a with-rule text shares with its text without the rule.
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.benchmarks.agent_bench.align import TEXT_MODE
from jaxeval.benchmarks.base import prompt_fields
from jaxeval.benchmarks.agent_bench.facts import check_length
from jaxeval.benchmarks.agent_bench.reference import load_reference, save_scores as write_scores
from jaxeval.benchmarks.agent_bench.rules import TextTokens, item_reads, read_targets, rules_metrics
from jaxeval.run.resumable import map_journaled

SELF_REFERENCE_NOTE = "no reference scores given: the model is its own reference (follow = retained = 1.00)"


def run_rules(backend, tokenizer, items: dict[tuple[str, str], list], mode: str,
              save_scores: str | Path | None = None, reference_scores: str | Path | None = None,
              journal=None, log_prompts: bool = False, batch_size: int = 1) -> dict:
    """items: (config, split) -> the split's loaded items, in run order. log_prompts: the texts in
    the --log_samples rows. batch_size: sequences no prefix is shared with, read that many per step."""
    sets = list(dict.fromkeys(config for config, _ in items))
    lengths = list(dict.fromkeys(split for _, split in items))
    notes = []
    if mode != TEXT_MODE:
        notes.append("rules configs: the stored qwen_* ids are not used yet; tokenized the texts (text mode)")
    texts = TextTokens(tokenizer)
    sequences: dict[tuple[int, ...], set[tuple[int, int]]] = {}
    plan = {}  # (config, split, item id, index) -> (without read, with read) or None
    tokens_naive = 0
    for (config, split), split_items in items.items():
        for item in split_items:
            for text in (item.text_without_rule, item.text_with_rule):
                check_length(backend, len(texts.ids(text)), config, split, item.id)
                tokens_naive += len(texts.ids(text))
            for index, reads in enumerate(item_reads(texts, item)):
                plan[(config, split, item.id, index)] = reads
                for read in reads or ():
                    sequences.setdefault(read.ids, set()).add((read.position, read.token))
    logprobs, tokens_run = _journaled_reads(backend, sequences, sets, lengths, journal, batch_size)
    scores = {key: None if reads is None else
              tuple(logprobs[(read.ids, read.position, read.token)] for read in reads)
              for key, reads in plan.items()}

    if save_scores is not None:
        write_scores(save_scores, scores, items, TEXT_MODE, tokenizer)
    if reference_scores is not None:
        reference = load_reference(reference_scores, items, TEXT_MODE, tokenizer)
        reference_info = {"source": str(reference_scores), "note": None}
    else:
        reference, reference_info = scores, {"source": "self", "note": SELF_REFERENCE_NOTE}
    results: dict[str, dict[str, dict]] = {}
    for (config, split), split_items in items.items():
        metrics = rules_metrics(split_items, scores, reference, config, split)
        metrics["mode"] = TEXT_MODE if split_items else None
        results.setdefault(config, {})[split] = metrics
    return {
        "sets": results, "notes": notes, "reference": reference_info, "samples": target_samples(items, scores, reference, texts, log_prompts),
        "tokens": {"rules_tokens_run": tokens_run, "rules_tokens_naive": tokens_naive,
                   "rules_sequences_read": len(sequences),
                   "rules_share_of_naive": tokens_run / tokens_naive if tokens_naive else None},
    }


def target_samples(items: dict, scores: dict, reference: dict, texts: TextTokens | None = None,
                   log_prompts: bool = False) -> list[dict]:
    """One --log_samples record per rules target: its two log-probs (without and with the rule;
    None when it could not be aligned) and the reference's, with where it sits; with texts, the
    read text with the rule as its prompt (sha256, tokens) and the one without's sha256 and tokens."""
    samples = []
    for (config, split), split_items in items.items():
        for item in split_items:
            for index, target in enumerate(item.targets):
                key = (config, split, item.id, index)
                mine, theirs = scores[key], reference[key]
                samples.append({"key": f"agent_bench/{config}/{split}/{item.id}/{index}", "config": config,
                                "split": split, "item": item.id, "target": index, "placement": item.placement,
                                "family": item.family, "expected_text": target.expected_text,
                                "distance_tokens": target.distance_tokens,
                                "logprob_without_rule": None if mine is None else mine[0],
                                "logprob_with_rule": None if mine is None else mine[1],
                                "reference_without_rule": None if theirs is None else theirs[0],
                                "reference_with_rule": None if theirs is None else theirs[1],
                                **(_prompts(item, texts, log_prompts) if texts is not None else {})})
    return samples


def _journaled_reads(backend, sequences: dict, sets, lengths, journal, batch_size: int = 1) -> tuple[dict, int]:
    """read_targets over every sequence as one journal record: the reads share KV-cached
    prefixes, so they are resumed all or nothing (a partial set could differ in the last bit)."""
    if not sequences:
        return {}, 0
    order = {ids: n for n, ids in enumerate(sequences)}

    def read_all(_batch) -> list[dict]:
        logprobs, tokens_run = read_targets(backend, sequences, batch_size)
        return [{"logprobs": [[order[ids], position, token, value]
                              for (ids, position, token), value in logprobs.items()],
                 "tokens_run": tokens_run}]

    key = f"agent_bench/rules/{'+'.join(sets)}/{'+'.join(lengths)}/all/0"
    (record,) = map_journaled(journal, [key], read_all, desc="agent_bench rules reads")
    by_index = list(sequences)
    return ({(by_index[n], position, token): value for n, position, token, value in record["logprobs"]},
            record["tokens_run"])


def _prompts(item, texts: TextTokens, log_prompts: bool) -> dict:
    without = prompt_fields(item.text_without_rule, len(texts.ids(item.text_without_rule)))
    return {**prompt_fields(item.text_with_rule, len(texts.ids(item.text_with_rule)), log_prompts),
            "prompt_without_rule_sha256": without["prompt_sha256"],
            "prompt_without_rule_tokens": without["prompt_tokens"]}
