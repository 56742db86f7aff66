"""Third opinion for the real-weight tier: jaxeval (float32) and transformers (float32) against float64.

The real-weight tier (tests/realweights/test_real_parity.py) compares two float32 implementations;
where they differ, this script says which one is closer to the same model computed in float64.
For one model and one text (default: the tier's 32k read of WikiText-2 test) it computes, at every
position p, log p(ids[p] | ids[:p]) three ways:

- jaxeval: load_model(dtype="float32", attention="chunked"), the read the tier checks;
- transformers float32: the tier's own reference (base model over the text in chunks through its
  DynamicCache, sdpa; the LM head in float32, the log-softmax over the vocabulary in float64);
- transformers float64: the same model cast to float64 with the places where transformers casts to
  float32 on its own (RMSNorm's `x.float()` / `.to(torch.float32)`, the rotary embedding's
  `.float()`) patched to stay in float64; LM head and log-softmax in float64.

The float64 reference has two rope modes: `float32` (default) uses exactly the angles both float32
implementations use (jaxeval's tables are bit-identical to transformers': float32(position) *
float32(inv_freq), one rounding) with cos/sin taken in float64, so it isolates arithmetic; `exact`
takes inverse frequencies and angles in float64 (what the float32 angle rounding itself costs,
shared by both float32 implementations).

The trunks run over every position; the LM heads (and so the figures) cover every position for
small vocabularies and every `--stride`-th position for Gemma's 262,144 entries (default 8: one
[T, 262144] head per implementation is ~11 TFLOP, the biggest cost on a CPU; --stride 1 for all).
Transformers runs in `--chunk`-token forwards (default 1024; the tier's 4096 gives bit-identical
float32 log-probs on SmolLM2, and fewer keys per sliding-window layer are cheaper). `--positions`
adds positions to the stride sample (the worst ones a realweights run reported). Intermediate
results are kept in <cache>/float64_check/ (a rerun skips finished stages; --fresh recomputes;
--stage runs one of the three independent stages, so they can run as parallel processes; the
float64 stage saves a partial result every 4096 positions, which --f64-partial reports from); the
figures (per 4k window: max and median |d log p| of each float32 implementation against float64,
and of one against the other) are printed as a Markdown table and written to
<cache>/float64_check/<tag>-<rope>.json. The figures in docs/models.md's "Real weights":

    python scripts/realweights_float64_check.py --model gemma3-270m --tokens 3584 --stride 32 --positions 3462,3518
    python scripts/realweights_float64_check.py --model smollm2-135m --tokens 24576
    python scripts/realweights_float64_check.py --model gemma3-270m   # 32k, stride 8

On 2 CPU cores the float64 trunk is the cost: about 11 minutes per 4k positions of Gemma under load
(Gemma at 3.5k: ~20 minutes for all three stages; the 32k runs take hours).

The folders come from scripts/build_real_models.py (JAXEVAL_REAL_MODELS, default ~/.cache/jaxeval/real_models).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("JAXEVAL_REAL_MODELS", "~/.cache/jaxeval/real_models")).expanduser()
TEXT = REPO.parent / "shared" / "data" / "text" / "wikitext2_test.txt"  # the tier's 32k text
WINDOW = 4096


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def text_ids(tokenizer, path: Path, n_tokens: int) -> np.ndarray:
    """The first n_tokens ids of the file, as tests/realweights/test_real_parity.py encodes them."""
    text = path.read_text(encoding="utf-8")[:10 * n_tokens]
    ids = np.asarray(tokenizer(text).input_ids, np.int64)
    if ids.size < n_tokens:
        raise SystemExit(f"{path}: {ids.size} tokens, {n_tokens} needed")
    return ids[:n_tokens]


# ---------------------------------------------------------------------------------------------
# transformers in float64


def _norm_in_dtype(module, x):
    """Gemma3RMSNorm / LlamaRMSNorm without their cast to float32."""
    import torch

    eps = module.variance_epsilon if hasattr(module, "variance_epsilon") else module.eps
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if type(module).__name__.startswith("Gemma"):
        return normed * (1.0 + module.weight)
    return module.weight * normed


def _rope_exact_inv_freq(theta: float, dim: int):
    import torch

    return 1.0 / (torch.tensor(float(theta), dtype=torch.float64) ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))


def patch_float64(hf, rope: str) -> None:
    """Make a model cast with .double() compute in float64 everywhere (see the module docstring)."""
    import torch

    for module in hf.modules():
        if type(module).__name__ in ("Gemma3RMSNorm", "LlamaRMSNorm"):
            module.forward = types.MethodType(_norm_in_dtype, module)
    rotary = hf.model.rotary_emb
    config = hf.config
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    params = config.rope_parameters

    def angles(inv_freq_f32, theta, position_ids):
        if rope == "exact":
            return position_ids[..., None].double() * _rope_exact_inv_freq(theta, dim)
        # float32(position) * float32(inv_freq), one rounding: the angles both float32 implementations use
        return (position_ids[..., None].float() * inv_freq_f32.float()).double()

    def finish(freqs, scaling):
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * scaling).to(torch.float64), (emb.sin() * scaling).to(torch.float64)

    if type(rotary).__name__ == "Gemma3RotaryEmbedding":
        def forward(self, x, position_ids, layer_type):
            for_type = params[layer_type]
            if for_type.get("rope_type", "default") != "default":
                raise SystemExit(f"rope type {for_type['rope_type']} not handled by this check")
            freqs = angles(getattr(self, f"{layer_type}_inv_freq"), for_type["rope_theta"], position_ids)
            return finish(freqs, getattr(self, f"{layer_type}_attention_scaling"))
    else:
        if params.get("rope_type", "default") != "default":
            raise SystemExit(f"rope type {params['rope_type']} not handled by this check")

        def forward(self, x, position_ids):
            return finish(angles(self.inv_freq, params["rope_theta"], position_ids), self.attention_scaling)
    rotary.forward = types.MethodType(forward, rotary)


def load_hf(folder: Path, float64: bool, rope: str, max_positions: int):
    import torch
    import transformers

    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32,
                                                           attn_implementation="sdpa").eval()
    if hf.config.max_position_embeddings < max_positions:
        hf.config.max_position_embeddings = max_positions  # as the tier's override (default rope: nothing else moves)
    if float64:
        hf = hf.double()
        patch_float64(hf, rope)
    return hf


def hf_hidden(hf, ids: np.ndarray, chunk: int, each_chunk=None) -> np.ndarray:
    """The final norm's output [n, D] for inputs ids[:n], n = ids.size - 1, chunk by chunk through a DynamicCache.

    each_chunk(end, hidden of positions < end): called after every chunk (partial results)."""
    import torch
    import transformers

    n = ids.size - 1
    inputs = torch.as_tensor(ids[None, :n])
    cache = transformers.DynamicCache(config=hf.config)
    out = []
    with torch.inference_mode():
        for start in range(0, n, chunk):
            end = min(n, start + chunk)
            res = hf.model(input_ids=inputs[:, start:end], position_ids=torch.arange(start, end)[None],
                           cache=cache, use_cache=True)
            out.append(res.last_hidden_state[0].numpy().copy())
            if each_chunk is not None:
                each_chunk(end, out)
            if end % 4096 == 0:
                log(f"  {end} / {n} positions")
    return np.concatenate(out)


def head_logp(hf, hidden: np.ndarray, targets: np.ndarray, rows: np.ndarray, block: int = 128) -> np.ndarray:
    """log p(targets[r]) at the given rows: the LM head in hidden's dtype, the log-softmax in float64."""
    import torch

    weight = hf.get_output_embeddings().weight.detach()
    cap = getattr(hf.config, "final_logit_softcapping", None)
    result = np.empty(rows.size, np.float64)
    with torch.inference_mode():
        for i in range(0, rows.size, block):
            r = rows[i:i + block]
            logits = torch.as_tensor(hidden[r]) @ weight.T
            if cap:
                logits = torch.tanh(logits / cap) * cap
            lp = torch.log_softmax(logits.double(), dim=-1)
            result[i:i + block] = lp.gather(1, torch.as_tensor(targets[r])[:, None])[:, 0].numpy()
    return result


# ---------------------------------------------------------------------------------------------
# jaxeval


def jaxeval_logp(folder: Path, ids: np.ndarray, rows: np.ndarray, overrides: dict) -> np.ndarray:
    """jaxeval's log p(ids[r + 1] | ids[:r + 1]) at the given rows."""
    import jaxeval

    model = jaxeval.load_model(folder, dtype="float32", attention="chunked", **overrides)
    got = model.read(ids, rows + 1, ids[rows + 1, None])
    return got.logprobs[:, 0].astype(np.float64)


# ---------------------------------------------------------------------------------------------


def stage(path: Path, fresh: bool, compute):
    if path.is_file() and not fresh:
        log(f"reusing {path}")
        return dict(np.load(path))
    t0 = time.perf_counter()
    result = compute()
    result["seconds"] = np.float64(time.perf_counter() - t0)
    np.savez(path, **result)
    log(f"wrote {path} ({result['seconds']:.0f} s)")
    return result


def window_figures(rows: np.ndarray, diffs: dict[str, np.ndarray], n: int) -> list[dict]:
    out = []
    for start in range(0, n, WINDOW):
        inside = (rows >= start) & (rows < start + WINDOW)
        entry = {"window": f"{start // 1024}k-{(start + WINDOW) // 1024}k", "positions": int(inside.sum())}
        for name, d in diffs.items():
            entry[f"{name}_max"] = float(d[inside].max())
            entry[f"{name}_median"] = float(np.median(d[inside]))
        out.append(entry)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=("gemma3-270m", "smollm2-135m"))
    p.add_argument("--tokens", type=int, default=32768, help="positions read (the text has one token more)")
    p.add_argument("--rope", choices=("float32", "exact"), default="float32",
                   help="float64 reference's angles: float32 (the ones both float32 implementations use) or exact")
    p.add_argument("--stride", type=int, default=0, help="LM heads on every stride-th position "
                   "(default: 1 for vocabularies up to 64k, else 8)")
    p.add_argument("--positions", default="", help="comma-separated positions to compare besides the stride "
                   "sample (e.g. the worst ones a realweights run reported)")
    p.add_argument("--chunk", type=int, default=1024, help="tokens per transformers forward")
    p.add_argument("--fresh", action="store_true", help="recompute every stage")
    p.add_argument("--stage", choices=("transformers32", "jaxeval32", "transformers64"),
                   help="compute only this stage and stop (the three are independent: run them as parallel "
                        "processes, then once more without --stage for the figures)")
    p.add_argument("--f64-partial", action="store_true", help="figures from the float64 stage's partial result "
                   "(saved every 4096 positions) when it has not finished")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    args = p.parse_args(argv)

    import torch
    import transformers

    if args.threads:
        torch.set_num_threads(args.threads)
    sys.path.insert(0, str(REPO / "scripts"))
    import build_real_models

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = build_real_models.build(args.model, CACHE, log=lambda _: None)
    work = CACHE / "float64_check"
    work.mkdir(parents=True, exist_ok=True)
    tag = f"{args.model}-{args.tokens}"
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    ids = text_ids(tokenizer, TEXT, args.tokens + 1)
    n = args.tokens
    targets = ids[1:]
    config = json.loads((folder / "config.json").read_text())
    overrides = {"max_position_embeddings": n} if n > config["max_position_embeddings"] else {}
    stride = args.stride or (1 if config["vocab_size"] <= 65536 else 8)
    rows = np.arange(stride - 1, n, stride)  # 0-based: row r predicts ids[r + 1]; the last position is read
    tag = f"{tag}-s{stride}"
    if args.positions:
        extra = np.array([int(x) for x in args.positions.split(",")], np.int64)
        if extra.min() < 1 or extra.max() > n:
            raise SystemExit(f"--positions must lie in 1..{n}")
        rows = np.union1d(rows, extra - 1)
        tag += "-p" + "_".join(str(x) for x in sorted(extra))

    def run_hf32():
        log("transformers float32")
        hf = load_hf(folder, False, "float32", n)
        hidden = hf_hidden(hf, ids, args.chunk)
        return {"ids": ids, "rows": rows, "hidden": hidden[rows], "logp": head_logp(hf, hidden, targets, rows)}

    def run_jaxeval():
        log(f"jaxeval float32 (overrides {overrides})")
        return {"logp": jaxeval_logp(folder, ids, rows, overrides)}

    def run_hf64():
        log(f"transformers float64 (rope {args.rope})")
        hf = load_hf(folder, True, args.rope, n)
        short = load_hf(folder, False, "float32", n)  # sanity: the patched float64 model is the same model
        a = hf_hidden(hf, ids[:257], 256)
        b = hf_hidden(short, ids[:257], 256)
        rel = float(np.abs(a - b).max() / np.abs(a).max())
        log(f"  float64 vs float32 on 256 tokens: max relative hidden difference {rel:.1e}")
        if rel > 1e-3:
            raise SystemExit("the patched float64 model does not compute the float32 model's function")
        del short
        gc.collect()
        # the head runs as the chunks pass and a partial result is saved every 4096 positions, so a
        # run stopped early still gives the figures of the positions it reached (--f64-partial)
        done = {"logp": [], "hidden": [], "upto": 0}

        def each_chunk(end, hidden_chunks):
            last = hidden_chunks[-1]  # positions end - len(last) .. end - 1
            new = rows[(rows >= done["upto"]) & (rows < end)]
            if new.size:
                local = new - (end - len(last))
                done["hidden"].append(last[local])
                done["logp"].append(head_logp(hf, last, targets[end - len(last):end], local))
            hidden_chunks[-1] = last[:0]  # nothing else needs the chunk's states
            done["upto"] = end
            if end % 4096 == 0 and end < n:
                np.savez(partial_path, hidden=np.concatenate(done["hidden"]), logp=np.concatenate(done["logp"]),
                         upto=np.int64(end), seconds=np.float64(0))

        hf_hidden(hf, ids, args.chunk, each_chunk)
        return {"hidden": np.concatenate(done["hidden"]), "logp": np.concatenate(done["logp"])}

    partial_path = work / f"{tag}-transformers64-{args.rope}.partial.npz"
    if args.stage == "jaxeval32":
        stage(work / f"{tag}-jaxeval32.npz", args.fresh, run_jaxeval)
        return 0
    if args.stage == "transformers64":
        stage(work / f"{tag}-transformers64-{args.rope}.npz", args.fresh, run_hf64)
        return 0
    hf32 = stage(work / f"{tag}-transformers32.npz", args.fresh, run_hf32)
    if args.stage:
        return 0
    if not np.array_equal(hf32["ids"], ids):
        raise SystemExit("cached transformers float32 stage read other ids: rerun with --fresh")
    gc.collect()

    jx = stage(work / f"{tag}-jaxeval32.npz", args.fresh, run_jaxeval)
    gc.collect()
    full_path = work / f"{tag}-transformers64-{args.rope}.npz"
    if args.f64_partial and not full_path.is_file():
        hf64 = dict(np.load(partial_path))
        log(f"float64 reference: partial, positions < {int(hf64['upto'])} only")
    else:
        hf64 = stage(full_path, args.fresh, run_hf64)
    covered = int(hf64.get("upto", n))
    if covered < n:  # figures over the positions the float64 run reached
        n = covered
        keep = rows < n
        rows = rows[keep]
        jx = {"logp": jx["logp"][keep], "seconds": jx["seconds"]}
        hf32 = {"logp": hf32["logp"][keep], "hidden": hf32["hidden"][keep], "seconds": hf32["seconds"]}
    ref = hf64["logp"]
    d_jax = np.abs(jx["logp"] - ref)
    d_hf = np.abs(hf32["logp"] - ref)
    d_pair = np.abs(jx["logp"] - hf32["logp"])
    h64 = hf64["hidden"]
    rel_hidden = np.linalg.norm(hf32["hidden"] - h64, axis=-1) / np.linalg.norm(h64, axis=-1)
    windows = window_figures(rows, {"jaxeval_vs_f64": d_jax, "transformers_vs_f64": d_hf,
                                    "jaxeval_vs_transformers": d_pair}, n)
    for w, start in zip(windows, range(0, n, WINDOW)):
        inside = (rows >= start) & (rows < start + WINDOW)
        w["transformers32_hidden_rel_err_median"] = float(np.median(rel_hidden[inside]))
    top = np.argsort(-d_pair)[:32]  # where the two float32 implementations differ most
    summary = {
        "model": args.model, "tokens": n, "tokens_read": args.tokens, "rope": args.rope, "text": TEXT.name, "overrides": overrides,
        "positions_compared": int(rows.size), "stride": stride, "chunk": args.chunk,
        "max": {"jaxeval_vs_f64": float(d_jax.max()), "transformers_vs_f64": float(d_hf.max()),
                "jaxeval_vs_transformers": float(d_pair.max())},
        "jaxeval_closer_fraction": float(np.mean(d_jax < d_hf)),
        "windows": windows,
        "worst_pairs": [{"position": int(rows[i] + 1), "jaxeval_vs_transformers": float(d_pair[i]),
                         "jaxeval_vs_f64": float(d_jax[i]), "transformers_vs_f64": float(d_hf[i]),
                         "f64_logp": float(ref[i])} for i in top],
        "mean_nll_f64": float(-ref.mean()),
        "seconds": {"transformers32": float(hf32["seconds"]), "jaxeval32": float(jx["seconds"]),
                    "transformers64": float(hf64["seconds"])},
    }
    out = work / f"{tag}-{args.rope}.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")

    print(f"\n{args.model}, {n} positions of {TEXT.name}, float64 rope angles: {args.rope}; LM heads on "
          f"{rows.size} positions (every {stride})")
    print("| window | jaxeval vs f64: max / median | transformers vs f64: max / median | jaxeval vs transformers: max |")
    print("|---|---|---|---|")
    for w in windows:
        print(f"| {w['window']} | {w['jaxeval_vs_f64_max']:.1e} / {w['jaxeval_vs_f64_median']:.1e} | "
              f"{w['transformers_vs_f64_max']:.1e} / {w['transformers_vs_f64_median']:.1e} | "
              f"{w['jaxeval_vs_transformers_max']:.1e} |")
    print(f"jaxeval closer to float64 at {100 * summary['jaxeval_closer_fraction']:.0f}% of the positions; "
          f"at the 8 positions where the float32 pair differs most:")
    for e in summary["worst_pairs"][:8]:
        print(f"  position {e['position']}: pair {e['jaxeval_vs_transformers']:.1e}, jaxeval-f64 "
              f"{e['jaxeval_vs_f64']:.1e}, transformers-f64 {e['transformers_vs_f64']:.1e} (log p {e['f64_logp']:.1f})")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
