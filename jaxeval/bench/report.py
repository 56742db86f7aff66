"""The `jaxeval bench` JSON: per-side figures, ratios, FLOPs and MFU, issue 18's targets, and a table."""

from __future__ import annotations

SCHEMA = "jaxeval-bench/1"
# issue 18 part 2: (name, what, comparison, threshold); each is checked only when it was measured
TARGETS = (
    ("read_time_8k", "read time / transformers' at 8,192 tokens", "<=", 0.5),
    ("read_time_32k", "read time / transformers' at 32,768 tokens", "<=", 0.7),
    ("read_mfu_32k", "necessary FLOPs / read time / matmul peak at 32,768 tokens", ">=", 0.6),
    ("read_peak_rss_32k", "peak RSS / transformers' at 32,768 tokens", "<=", 0.25),
    ("generate_batch8", "generated tokens/s / transformers' at batch 8", ">=", 2.0),
    ("rules_share", "rules tokens run / naive token count (with prefix reuse)", "<=", 0.45),
)


def _ratio(a, b) -> float | None:
    return None if a is None or not b else a / b


def _seconds(side: dict | None) -> float | None:
    return None if not side or "error" in side else side["seconds"]


def read_entry(raw: dict, flops: dict, peak: float) -> dict:
    j, t = raw["sides"].get("jaxeval"), raw["sides"].get("transformers")
    tokens = raw["tokens"]
    entry = {"tokens": tokens, "read_rows": tokens - 1, "flops": flops, "jaxeval": j, "transformers": t,
             "transformers_unavailable": raw["skipped"].get("transformers")}
    for side in (j, t):
        if side and "error" not in side:
            side["tokens_per_s"] = tokens / side["seconds"]
            side["achieved_flops_per_s"] = flops["total"] / side["seconds"]
            side["mfu"] = side["achieved_flops_per_s"] / peak if peak else None
    entry["ratio"] = {"seconds": _ratio(_seconds(j), _seconds(t)),
                      "peak_rss": _ratio(j and j.get("peak_rss_mb"), t and t.get("peak_rss_mb")) if t and "error" not in t else None,
                      "per_repeat_seconds": ([a / b for a, b in zip(j["times"], t["times"])]
                                             if _seconds(j) and _seconds(t) else None)}
    if _seconds(j) and _seconds(t):
        entry["mean_logprob_difference"] = abs(j["mean_logprob"] - t["mean_logprob"])
    return entry


def generate_entry(raw: dict, prompt_tokens: int, new_tokens: int) -> dict:
    j, t = raw["sides"].get("jaxeval"), raw["sides"].get("transformers")
    for side in (j, t):
        if side and "error" not in side:
            side["tokens_per_s"] = side["new_tokens"] / side["seconds"]
    entry = {"batch": raw["batch"], "prompt_tokens": prompt_tokens, "new_tokens": new_tokens, "jaxeval": j,
             "transformers": t, "transformers_unavailable": raw["skipped"].get("transformers"),
             "ratio": {"tokens_per_s": _ratio(j and j.get("tokens_per_s"), t and t.get("tokens_per_s"))}}
    if _seconds(j) and _seconds(t):
        a, b = j["first_row"], t["first_row"]
        entry["greedy_tokens_agreeing"] = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return entry


def rules_entry(raw: dict | None) -> dict | None:
    if raw is None:
        return None
    out = dict(raw)
    for key in ("reuse", "no_reuse"):
        side = out[key]
        if "error" not in side:
            side["share_of_naive"] = side["tokens_run"] / side["tokens_naive"]
    out["ratio"] = {"seconds": _ratio(_seconds(out["reuse"]), _seconds(out["no_reuse"]))}
    return out


def check_targets(report: dict) -> list[dict]:
    by_tokens = {r["tokens"]: r for r in report["read"]}
    by_batch = {g["batch"]: g for g in report["generate"]}
    measured = {
        "read_time_8k": by_tokens.get(8192, {}).get("ratio", {}).get("seconds"),
        "read_time_32k": by_tokens.get(32768, {}).get("ratio", {}).get("seconds"),
        "read_mfu_32k": (by_tokens.get(32768, {}).get("jaxeval") or {}).get("mfu"),
        "read_peak_rss_32k": by_tokens.get(32768, {}).get("ratio", {}).get("peak_rss"),
        "generate_batch8": by_batch.get(8, {}).get("ratio", {}).get("tokens_per_s"),
        "rules_share": ((report["rules"] or {}).get("reuse") or {}).get("share_of_naive"),
    }
    targets = []
    for name, what, op, threshold in TARGETS:
        value = measured[name]
        met = None if value is None else (value <= threshold if op == "<=" else value >= threshold)
        targets.append({"name": name, "what": what, "target": f"{op} {threshold}", "measured": value, "met": met})
    return targets


def _fmt(x, spec=".3g") -> str:
    return "-" if x is None else format(x, spec)


def _row(label: str, entry: dict, key: str, ratio, mfu) -> str:
    j, t = entry["jaxeval"] or {}, entry["transformers"] or {}
    return (f"{label:<26}{_fmt(j.get(key)):>12}{_fmt(t.get(key)):>14}{_fmt(ratio):>8}{_fmt(mfu, '.1%'):>7}"
            f"{_fmt(j.get('peak_rss_mb'), '.0f') + '/' + _fmt(t.get('peak_rss_mb'), '.0f'):>16}"
            f"{_fmt((j.get('compile_first_call') or {}).get('count'), 'd'):>9}")


def table(report: dict) -> str:
    """The terminal summary: one line per measurement, then the targets."""
    lines = [f"jaxeval bench: {report['model']['name']} ({report['model']['dtype']}, {report['hardware']['platform']}, "
             f"matmul peak {_fmt((report['matmul_peak']['flops_per_s'] or 0) / 1e9, '.1f')} GFLOP/s, "
             f"load {'/'.join(f'{x:.1f}' for x in report['load']['before'])} -> "
             f"{'/'.join(f'{x:.1f}' for x in report['load']['after'])})"]
    if not report["transformers"]["available"]:
        lines.append(f"transformers comparison unavailable: {report['transformers']['reason']}")
    lines.append(f"{'measurement':<26}{'jaxeval':>12}{'transformers':>14}{'ratio':>8}{'MFU':>7}"
                 f"{'RSS MB j/t':>16}{'compiles':>9}")
    for r in report["read"]:
        lines.append(_row(f"read {r['tokens']} tok (s)", r, "seconds", r["ratio"]["seconds"], (r["jaxeval"] or {}).get("mfu")))
    for g in report["generate"]:
        lines.append(_row(f"generate batch {g['batch']} (tok/s)", g, "tokens_per_s", g["ratio"]["tokens_per_s"], None))
    rules = report["rules"]
    if rules:
        a, b = rules["reuse"], rules["no_reuse"]
        lines.append(f"{'rules: reuse / none (s)':<26}{_fmt(a.get('seconds')):>12}{_fmt(b.get('seconds')):>14}"
                     f"{_fmt(rules['ratio']['seconds']):>8}   tokens {_fmt(a.get('share_of_naive'), '.1%')} / "
                     f"{_fmt(b.get('share_of_naive'), '.1%')} of naive")
    for entry in (*report["read"], *report["generate"], *([rules["reuse"], rules["no_reuse"]] if rules else [])):
        for side in ("jaxeval", "transformers"):
            if isinstance(entry, dict) and isinstance(entry.get(side), dict) and "error" in entry[side]:
                lines.append(f"error: {entry[side]['error']}")
        if isinstance(entry, dict) and "error" in entry:
            lines.append(f"error: {entry['error']}")
    for target in report["targets"]:
        if target["met"] is not None:
            lines.append(f"target {target['name']} {target['target']}: {_fmt(target['measured'])} "
                         f"{'met' if target['met'] else 'MISSED'}")
    return "\n".join(lines)
