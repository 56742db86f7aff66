"""The plan's JSON: counts per task and length bin, FLOPs, memory, time and judge cost."""

from __future__ import annotations

from jaxeval.plan import cost
from jaxeval.plan.hardware import ACCELERATORS

GiB = 2 ** 30


def tokens_section(config, counted: dict) -> tuple[dict, dict]:
    """(per task: {length bin: counts}, totals)."""
    per_task, totals = {}, {"requests": 0, "tokens_read": 0, "read_rows": 0, "prompt_tokens": 0,
                            "generated_tokens_max": 0, "flops_read": 0.0, "flops_prefill": 0.0, "flops_decode": 0.0}
    for task, (recorder, _) in counted.items():
        bins: dict[str, dict] = {}

        def row(tokens):
            return bins.setdefault(cost.length_bin(tokens), {key: 0 for key in totals})

        for s in recorder.reads:
            r = row(s.length)
            r["requests"] += 1 if s.rows else 0
            r["tokens_read"] += s.end - s.first
            r["read_rows"] += s.rows
            r["flops_read"] += cost.segment_flops(config, s.first, s.end, s.rows)
        for batch in recorder.batches:
            for prompt in batch.prompts:
                r = row(prompt)
                prefill, decode = cost.generation_flops(config, prompt, batch.max_new_tokens)
                r["requests"] += 1
                r["prompt_tokens"] += prompt
                r["generated_tokens_max"] += batch.max_new_tokens
                r["flops_prefill"] += prefill
                r["flops_decode"] += decode
        per_task[task] = dict(sorted(bins.items(), key=lambda kv: _bin_order(kv[0])))
        for r in bins.values():
            for key in totals:
                totals[key] += r[key]
    totals["flops"] = totals["flops_read"] + totals["flops_prefill"] + totals["flops_decode"]
    return per_task, totals


def _bin_order(label: str) -> float:
    return float("inf") if label.startswith(">") else int(label[2:-1])


def memory_section(config, counted: dict, weights: int, dtype: str, mesh: dict, device_bytes: int | None,
                   host_baseline: int = 0, on_cpu: bool = False) -> dict:
    read_len = max((cost.cache_lengths(r)[0] for r, _ in counted.values()), default=0)
    rows, gen_len = max((cost.cache_lengths(r)[1] for r, _ in counted.values()), key=lambda x: x[0] * x[1],
                        default=(0, 0))
    kv_read, kv_gen = cost.kv_bytes(config, 1, read_len, dtype), cost.kv_bytes(config, rows, gen_len, dtype)
    kv = max(kv_read, kv_gen)
    chip = cost.per_chip(weights, kv, mesh)
    fits = None if device_bytes is None else chip <= device_bytes
    return {"would_fit": None if fits is not False else _would_fit(config, weights, kv_read, rows, gen_len, dtype,
                                                                    device_bytes),
            "weights_bytes": weights, "kv_cache_read_bytes": kv_read, "read_cache_length": read_len,
            "kv_cache_generate_bytes": kv_gen, "generate_cache": {"rows": rows, "length": gen_len},
            "device_bytes": weights + kv, "device_bytes_per_chip": chip, "mesh": mesh,
            "device_memory_bytes": device_bytes, "fits": fits,
            "host_bytes": host_baseline + weights + (weights + kv if on_cpu else 0), "host_baseline_bytes": host_baseline,
            "note": "device: weights as stored + the larger KV cache (the longest read, or the largest "
                    "generation batch x its cache length); activations, the head's rows and XLA's workspace are "
                    "left out; host: this process's memory after the tokenizer and data (the plan's own RSS) + "
                    "the weights staged once at load (+ the device bytes on CPU)"}


def _would_fit(config, weights: int, kv_read: int, rows: int, gen_len: int, dtype: str, device_bytes: int) -> dict:
    """What would fit when the run does not: the largest generation batch at this mesh-free size,
    and the chips (an fsdp x context mesh splitting weights and caches) the whole run needs."""
    per_row = cost.kv_bytes(config, 1, gen_len, dtype) if gen_len else 0
    room = device_bytes - weights
    batch = int(room // per_row) if per_row and room > 0 else 0
    need = max(weights + kv_read, weights + per_row * rows)
    chips = 1
    while chips < 4096 and need / chips > device_bytes:
        chips *= 2
    return {"generation_batch": batch if room > kv_read else 0,
            "chips": chips, "mesh": f"fsdp={chips}" if chips > 1 else None,
            "note": "batch: the most generation rows whose KV cache fits beside the weights on one chip "
                    "(0: the weights or the longest read alone do not fit); chips: the smallest power of two "
                    "splitting weights and cache under the chip's memory (--mesh fsdp=N, or tensor / context axes)"}


def time_section(counted: dict, totals: dict, memory: dict, hardware: dict, chips: int) -> dict:
    """Seconds from the hardware's rates (see hardware.py): FLOPs at peak x MFU over the chips;
    decode steps also bounded by reading the weights and caches at bandwidth x MBU; a model
    calibration adds its measured compile time per distinct shape."""
    peak = hardware.get("flops_per_s")
    if not peak:
        return {"wall_time_s": None, "note": "no calibration (--calibrate none)"}
    rate = peak * hardware.get("mfu", 1.0) * chips
    read_s = totals["flops_read"] / rate
    prefill_s = totals["flops_prefill"] / rate
    decode_s = 0.0
    bandwidth = hardware.get("hbm_bytes_per_s")
    step_s = hardware.get("decode_step_s")
    for recorder, _ in counted.values():
        for batch in recorder.batches:
            flops = sum(cost.generation_flops(hardware["config"], p, batch.max_new_tokens)[1] for p in batch.prompts)
            steps = batch.max_new_tokens
            by_flops = flops / rate
            if step_s is not None:
                decode_s += max(by_flops, steps * step_s)
            elif bandwidth:
                rows = len(batch.prompts)
                step_bytes = (memory["weights_bytes"] + cost.kv_bytes(hardware["config"], rows, batch.cache_len,
                                                                      hardware["dtype"])) / chips
                decode_s += max(by_flops, steps * step_bytes / (bandwidth * hardware["mbu"]))
            else:
                decode_s += by_flops
    compile_s = 0.0
    if hardware.get("compile_s") is not None:
        shapes = set()
        for recorder, _ in counted.values():
            shapes |= {("read", b) for b in cost.read_buckets(recorder)}
            shapes |= {("generate", cost._rows(len(b.prompts)), b.cache_len) for b in recorder.batches}
        compile_s = len(shapes) * hardware["compile_s"]
    total = read_s + prefill_s + decode_s + compile_s
    chip_hours = total * chips / 3600
    price = hardware.get("chip_price")
    return {"wall_time_s": total, "read_s": read_s, "prefill_s": prefill_s, "decode_s_max": decode_s,
            "compile_s": compile_s, "chips": chips, "chip_hours": chip_hours,
            "chip_cost_usd": chip_hours * price if price is not None else None,
            "note": "decode at max_new_tokens per prompt (an upper bound); host work (tokenisation, scoring) "
                    "not included"}


def judge_section(counted: dict, price: tuple[float, float] | None) -> dict:
    calls = [call for recorder, _ in counted.values() for call in recorder.judge_calls]
    prompt_tokens = sum(c[1] for c in calls)
    reply_tokens = sum(c[2] for c in calls)
    by_judge: dict = {}
    for label, tokens, reply in calls:
        entry = by_judge.setdefault(label, {"calls": 0, "prompt_tokens": 0, "reply_tokens_max": 0})
        entry["calls"] += 1
        entry["prompt_tokens"] += tokens
        entry["reply_tokens_max"] += reply
    out = {"calls": len(calls), "prompt_tokens": prompt_tokens, "reply_tokens_max": reply_tokens, "by_judge": by_judge,
           "price_usd_max": None if price is None else prompt_tokens / 1e6 * price[0] + reply_tokens / 1e6 * price[1],
           "note": "prompt tokens counted with the evaluated model's tokenizer, the generations as empty "
                   "(each judged output adds up to its max_new_tokens); replies at the judge's max_tokens"}
    return out


def accelerator_hardware(name: str, mfu: float, mbu: float) -> dict:
    peak, hbm, bandwidth, _ = ACCELERATORS[name]
    return {"source": f"named accelerator {name}: {peak / 1e12:.0f} TFLOP/s bf16 peak at MFU {mfu}, "
                      f"{bandwidth / 1e9:.0f} GB/s HBM at MBU {mbu}",
            "accelerator": name, "flops_per_s": peak, "mfu": mfu, "mbu": mbu, "hbm_bytes_per_s": bandwidth,
            "device_memory_bytes": hbm}


def format_table(plan: dict) -> str:
    lines = [f"plan: {plan['model']} ({plan['dtype']}), tasks {', '.join(plan['tasks'])}", "",
             f"{'task':<16} {'length':>7} {'requests':>8} {'tokens read':>12} {'prompt tok':>11} "
             f"{'gen tok max':>11} {'TFLOPs':>10}"]
    if plan.get("tokenizer_proxy"):
        lines.insert(1, f"note: {plan['tokenizer_proxy']}")
    for note in (plan.get("estimated_from_counts") or {}).values():
        lines.insert(1, f"note: {note}")
    for task, bins in plan["tokens"].items():
        for label, r in bins.items():
            flops = r["flops_read"] + r["flops_prefill"] + r["flops_decode"]
            lines.append(f"{task:<16} {label:>7} {r['requests']:>8} {r['tokens_read']:>12,} {r['prompt_tokens']:>11,} "
                         f"{r['generated_tokens_max']:>11,} {flops / 1e12:>10.3f}")
    t = plan["totals"]
    lines.append(f"{'total':<16} {'':>7} {t['requests']:>8} {t['tokens_read']:>12,} {t['prompt_tokens']:>11,} "
                 f"{t['generated_tokens_max']:>11,} {t['flops'] / 1e12:>10.3f}")
    items = plan["items"]
    lines.append("")
    lines.append("items: " + ", ".join(f"{leaf} {n}" for leaf, n in items.items()))
    m, tm, j = plan["memory"], plan["time"], plan["judge"]
    lines.append(f"memory: weights {m['weights_bytes'] / GiB:.3f} GiB, KV cache {max(m['kv_cache_read_bytes'], m['kv_cache_generate_bytes']) / GiB:.3f} GiB"
                 f" -> {m['device_bytes_per_chip'] / GiB:.3f} GiB per chip"
                 + ("" if m["device_memory_bytes"] is None else
                    f" of {m['device_memory_bytes'] / GiB:.1f} GiB ({'fits' if m['fits'] else 'DOES NOT FIT'})")
                 + f"; host {m['host_bytes'] / GiB:.3f} GiB")
    if m.get("would_fit"):
        w = m["would_fit"]
        lines.append(f"would fit: --batch_size {w['generation_batch']} on one chip" if w["generation_batch"] else
                     "would fit: not on one chip at any batch size")
        lines[-1] += f"; the whole run on {w['chips']} chips (--mesh {w['mesh']})" if w["mesh"] else ""
    wall = tm.get("wall_time_s")
    chip_hours = tm.get("chip_hours")
    cost_usd = tm.get("chip_cost_usd")
    lines.append(f"time: {'unknown' if wall is None else f'{wall:,.1f} s'} on {plan['hardware']['source']}"
                 + ("" if chip_hours is None else f"; {chip_hours:,.3f} chip-hours")
                 + ("" if cost_usd is None else f" (${cost_usd:,.2f} at --chip_price)"))
    price = j["price_usd_max"]
    lines.append(f"judge: {j['calls']} calls, {j['prompt_tokens']:,} prompt tokens, <= {j['reply_tokens_max']:,} reply "
                 f"tokens" + ("" if price is None else f", <= ${price:,.2f}"))
    return "\n".join(lines)
