"""The `jaxeval bench` JSON: per-side figures, ratios, FLOPs and MFU, the decode step, issue 27's targets, a table.

Schema 2 adds the decode step, each phase's load, the commit and issue 27's targets; a schema-1 file
(issue 18's targets) still reads: check_targets and table take it as it is.
"""

from __future__ import annotations

import statistics

from jaxeval.plan.cost import kv_bytes

SCHEMA = "jaxeval-bench/2"
TARGETS_FROM = "issue 27"
READ_TIME = ("<=", 1.0)  # every read length run: at most transformers' time in the same run
READ_PEAK_SHARE = (32768, ">=", 0.8)  # necessary FLOPs / read time / the run's measured matmul peak
GENERATE = dict(batch=8, prompt_tokens=4096, new_tokens=128, op=">=", threshold=1.5)  # tokens/s / transformers'
DECODE = dict(rows=8, slots=(256, 4096), op="<=", threshold=1.1)  # early-position step time, 4,096 / 256 slots
RULES = ("<=", 0.5)  # rules configs' seconds with prefix reuse / without


def _ratio(a, b) -> float | None:
    return None if a is None or not b else a / b


def _seconds(side: dict | None) -> float | None:
    return None if not side or "error" in side else side["seconds"]


def _cpu_ratio(j: dict | None, t: dict | None) -> float | None:
    """jaxeval's process CPU seconds / transformers' (None where a side has none: schema 1, an error)."""
    return _ratio((j or {}).get("cpu_seconds"), (t or {}).get("cpu_seconds"))


def read_entry(raw: dict, flops: dict, peak: float) -> dict:
    j, t = raw["sides"].get("jaxeval"), raw["sides"].get("transformers")
    tokens = raw["tokens"]
    entry = {"tokens": tokens, "read_rows": tokens - 1, "flops": flops, "jaxeval": j, "transformers": t,
             "transformers_unavailable": raw["skipped"].get("transformers"), "load": raw.get("load")}
    for side in (j, t):
        if side and "error" not in side:
            side["tokens_per_s"] = tokens / side["seconds"]
            side["achieved_flops_per_s"] = flops["total"] / side["seconds"]
            side["mfu"] = side["achieved_flops_per_s"] / peak if peak else None
    entry["ratio"] = {"seconds": _ratio(_seconds(j), _seconds(t)), "cpu_seconds": _cpu_ratio(j, t),
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
             "ratio": {"tokens_per_s": _ratio(j and j.get("tokens_per_s"), t and t.get("tokens_per_s")),
                       "cpu_seconds": _cpu_ratio(j, t)},
             "load": raw.get("load")}
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
    out["ratio"] = {"seconds": _ratio(_seconds(out["reuse"]), _seconds(out["no_reuse"])),
                    "cpu_seconds": _cpu_ratio(out["reuse"], out["no_reuse"])}
    return out


def decode_entry(raw: dict | None, config, dtype: str) -> dict | None:
    """Per (slots, position): median and min wall ms, median CPU ms, and the K/V bytes the step's
    attention needs (every key up to the position, all rows and layers: jaxeval.plan.cost.kv_bytes);
    then per position the growth from the fewest to the most slots, in time and in those bytes. The
    growth's `time` is of the min wall times: a step of tens of ms on shared cores is delayed by
    whatever else runs, never sped up, so the least time is the step's own (perf/decode_step.py too)."""
    if raw is None or "error" in raw:
        return raw
    steps = []
    for st in raw["steps"]:
        steps.append({"slots": st["slots"], "position_name": st["position_name"], "position": st["position"],
                      "ms": round(1e3 * statistics.median(st["wall_s"]), 3), "min_ms": round(1e3 * min(st["wall_s"]), 3),
                      "cpu_ms": round(1e3 * statistics.median(st["cpu_s"]), 3),
                      "kv_bytes_read": kv_bytes(config, raw["rows"], st["position"] + 1, dtype)})
    growth = {}
    for name in dict.fromkeys(st["position_name"] for st in steps):
        mine = sorted((st for st in steps if st["position_name"] == name), key=lambda st: st["slots"])
        low, high = mine[0], mine[-1]
        if low is not high:
            growth[name] = {"from_slots": low["slots"], "to_slots": high["slots"],
                            "time": high["min_ms"] / low["min_ms"], "median_time": high["ms"] / low["ms"],
                            "cpu_time": high["cpu_ms"] / low["cpu_ms"],
                            "kv_bytes_read": high["kv_bytes_read"] / low["kv_bytes_read"]}
    return {k: v for k, v in raw.items() if k != "steps"} | {"steps": steps, "growth": growth}


def _length_name(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)


def check_targets(report: dict) -> list[dict]:
    """Issue 27's targets, each with what it compares, the row measured (None: not run) and met / missed.

    Reads a schema-1 report too (no decode step: that target is not measured)."""
    targets = []

    def add(name, what, op, threshold, value, note=None, cpu=None):
        """cpu: the same comparison in process CPU seconds, beside (not judged): steadier on shared cores."""
        met = None if value is None else (value <= threshold if op == "<=" else value >= threshold)
        targets.append({"name": name, "what": what, "target": f"{op} {threshold}", "measured": value, "met": met}
                       | ({"cpu_measured": cpu} if value is not None and cpu is not None else {})
                       | ({"note": note} if note else {}))

    by_tokens = {r["tokens"]: r for r in report.get("read") or []}
    for tokens in sorted({8192, 32768} | set(by_tokens)):
        ratio = by_tokens.get(tokens, {}).get("ratio") or {}
        add(f"read_time_{_length_name(tokens)}", f"read time / transformers' at {tokens:,} tokens, same run",
            *READ_TIME, ratio.get("seconds"), cpu=ratio.get("cpu_seconds"))
    tokens, op, threshold = READ_PEAK_SHARE
    add(f"read_peak_share_{_length_name(tokens)}",
        f"necessary FLOPs / read time / matmul peak measured in the run, at {tokens:,} tokens", op, threshold,
        (by_tokens.get(tokens, {}).get("jaxeval") or {}).get("mfu"))

    g = GENERATE
    row = next((x for x in report.get("generate") or [] if x["batch"] == g["batch"]), None)
    value, note, cpu = None, None, None
    if row is not None and (row["prompt_tokens"], row["new_tokens"]) != (g["prompt_tokens"], g["new_tokens"]):
        note = (f"the batch-{g['batch']} row ran {row['prompt_tokens']} prompt / {row['new_tokens']} new tokens, "
                "not the target's")
    elif row is not None:
        value = row["ratio"]["tokens_per_s"]
        cpu = _ratio(1, row["ratio"].get("cpu_seconds"))  # transformers' CPU seconds / jaxeval's: as tokens/s
    add(f"generate_batch{g['batch']}", f"greedy tokens/s / transformers' at batch {g['batch']}, "
        f"{g['prompt_tokens']:,}-token prompts, {g['new_tokens']} new tokens", g["op"], g["threshold"], value, note,
        cpu)

    d, decode, cpu = DECODE, report.get("decode_step"), None
    low, high = d["slots"]
    growth = ((decode or {}).get("growth") or {}).get("early")
    value, note = None, None
    if growth and (decode["rows"], growth["from_slots"], growth["to_slots"]) != (d["rows"], low, high):
        note = f"measured {decode['rows']} rows, {growth['from_slots']} to {growth['to_slots']} slots, not the target's"
    elif growth:
        value, cpu = growth["time"], growth.get("cpu_time")
    add("decode_step_growth", f"batch-{d['rows']} decode step time at {high:,} / at {low:,} cache slots, at an "
        "early position, min of the repeats (the same keys read: the step must not grow with the cache beyond "
        "attention's own reads; 0.1 over 1.0 for timing noise)", d["op"], d["threshold"], value, note, cpu)

    rules = report.get("rules") or {}
    ratio = rules.get("ratio") or {}
    add("rules_reuse_time", "rules configs' seconds with prefix reuse / without it, same worker", *RULES,
        ratio.get("seconds"), cpu=ratio.get("cpu_seconds"))
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
    decode = report.get("decode_step")
    if decode and "error" not in decode:
        for st in decode["steps"]:
            lines.append(f"{'decode step ' + str(st['slots']) + ' slots, ' + st['position_name']:<30}"
                         f"{_fmt(st['ms'], '.1f'):>9} ms  (min {_fmt(st['min_ms'], '.1f')}, CPU {_fmt(st['cpu_ms'], '.1f')}; "
                         f"position {st['position']}, K/V read {st['kv_bytes_read'] / 2 ** 20:.1f} MiB)")
        for name, g in decode["growth"].items():
            lines.append(f"{'decode growth, ' + name:<30}{_fmt(g['time'], '.3f'):>9}x time, {_fmt(g['kv_bytes_read'], '.3g')}x "
                         f"K/V bytes read ({g['from_slots']} -> {g['to_slots']} slots)")
    for entry in (*report["read"], *report["generate"], *([rules["reuse"], rules["no_reuse"]] if rules else []),
                  *([decode] if decode else [])):
        for side in ("jaxeval", "transformers"):
            if isinstance(entry, dict) and isinstance(entry.get(side), dict) and "error" in entry[side]:
                lines.append(f"error: {entry[side]['error']}")
        if isinstance(entry, dict) and "error" in entry:
            lines.append(f"error: {entry['error']}")
    for target in report["targets"]:
        verdict = "not measured" if target["met"] is None else "met" if target["met"] else "MISSED"
        cpu = f" (CPU seconds: {_fmt(target['cpu_measured'])})" if "cpu_measured" in target else ""
        lines.append(f"target {target['name']} {target['target']}: {_fmt(target['measured'])} {verdict}{cpu}"
                     + (f" ({target['note']})" if target.get("note") else ""))
    return "\n".join(lines)
