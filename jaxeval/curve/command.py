"""`jaxeval curve --text FILE [--length N] [--buckets B] [--reference MODEL] [--out DIR]`:
writes DIR/curve.json (per bucket and overall) and DIR/curve.png (matplotlib Agg)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaxeval.curve.text import DEFAULT_TEXT
from jaxeval.errors import ConfigError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text", default=DEFAULT_TEXT,
                   help="a UTF-8 text file, a JSON file with a 'text' field (RULER's haystack layout), or a RULER "
                        "haystack: ruler:essay (--ruler_essay, else the shipped public-domain stand-in) or "
                        f"ruler:noise (default: {DEFAULT_TEXT})")
    p.add_argument("--ruler_essay", default=None,
                   help="RULER's PaulGrahamEssays.json for --text ruler:essay (default: the shipped Pride and Prejudice)")
    p.add_argument("--length", type=int, default=None, help="tokens to read (default: as many as the model reads)")
    p.add_argument("--buckets", type=int, default=16, help="position buckets of equal width")
    p.add_argument("--reference", default=None, help="a second model (same vocabulary): KL(reference || model) and "
                                                     "top-1 agreement per bucket; it loads with the model's flags and --reference_args")
    p.add_argument("--reference_args", default="",
                   help="model flags that differ for the reference, k=v,... (quantize=none,kv_cache=exact,dtype=float32)")
    p.add_argument("--out", default="curve", help="folder for curve.json and curve.png")


REFERENCE_FLAGS = ("dtype", "attention", "prefill_chunk", "quantize", "quant_group", "dequantize", "kv_cache",
                   "kv_sinks", "kv_window", "kv_budget", "kv_observe", "kv_kernel", "kv_pool")


def reference_namespace(args) -> argparse.Namespace:
    """The model flags for the reference: the model's, with --reference and --reference_args."""
    changes = {"model": args.reference}
    for part in filter(None, (p.strip() for p in args.reference_args.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in REFERENCE_FLAGS:
            raise ConfigError(f"--reference_args: {part!r} is not k=v with k one of {', '.join(REFERENCE_FLAGS)}")
        current = getattr(args, key, None)
        if isinstance(current, bool) or key == "dequantize":
            changes[key] = value.lower() in ("true", "1", "yes")
        elif isinstance(current, int) or key in ("prefill_chunk", "quant_group", "kv_sinks", "kv_window",
                                                 "kv_budget", "kv_observe", "kv_kernel"):
            try:
                changes[key] = int(value)
            except ValueError:
                raise ConfigError(f"--reference_args: {key} needs an integer, got {value!r}") from None
        else:
            changes[key] = value
    return argparse.Namespace(**{**vars(args), **changes})


def cmd_curve(args, load) -> int:
    from jaxeval.options.model import ModelOptions

    from jaxeval.curve.positions import bucket_stats, overall, read_positions
    from jaxeval.curve.text import check_length, resolve_text, text_ids
    from jaxeval.generation import require_tokenizer
    from jaxeval.io.outputs import check_output_folder

    if args.reference_args and not args.reference:
        raise ConfigError("--reference_args needs --reference")
    if args.reference:
        reference_namespace(args)  # a bad --reference_args fails before any model loads
    if args.buckets < 1:
        raise ConfigError(f"--buckets must be a positive integer, got {args.buckets}")
    check_length(args.length)
    check_output_folder(args.out, "--out")
    text, source = resolve_text(args.text, args.ruler_essay)  # a bad file fails before any model loads
    model = load(ModelOptions.of(args))
    ids = text_ids(source["path"] or args.text, text, require_tokenizer(model, "jaxeval curve"), args.length,
                   model.max_length)
    reference = None
    if args.reference:
        reference = load(ModelOptions.of(reference_namespace(args)))
    values = read_positions(model, ids, reference)
    width = -(-len(ids) // args.buckets)
    result = {"model": str(args.model), "reference": args.reference, "reference_args": args.reference_args or None, "text": str(args.text),
              "text_source": source, "tokens": len(ids),
              "bucket_width": width, "kl": "KL(reference || model), nats, full vocabulary, float32" if reference else None,
              "overall": overall(values), "buckets": bucket_stats(values, width)}
    out = Path(args.out)
    (out / "curve.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    plot(result, out / "curve.png")
    print(format_summary(result))
    print(f"wrote {out / 'curve.json'} and {out / 'curve.png'}")
    return 0


def plot(result: dict, path: Path) -> Path:
    from jaxeval.report.data import Figure, Panel
    from jaxeval.report.plots import render_figure

    name = Path(result["model"]).name or result["model"]
    x = tuple(str(b["start"]) for b in result["buckets"])

    def series(field):
        return {name: {str(b["start"]): b[field] for b in result["buckets"]}}

    panels = [Panel("mean log-probability", "bucket start (token position)", "nats", x, series("mean_logprob")),
              Panel("top-1 rate", "bucket start (token position)", "fraction", x, series("top1_rate"), y_range=(0, 1))]
    if result["reference"]:
        panels += [Panel("KL(reference || model)", "bucket start (token position)", "nats", x, series("mean_kl")),
                   Panel("top-1 agreement with the reference", "bucket start (token position)", "fraction", x,
                         series("top1_agreement"), y_range=(0, 1))]
    title = f"{name}: {result['tokens']} tokens of {Path(result['text']).name}"
    return render_figure(Figure("curve", title, tuple(panels)), [name], path)


def format_summary(result: dict) -> str:
    o = result["overall"]
    line = (f"curve: {result['tokens']} tokens, {len(result['buckets'])} buckets of {result['bucket_width']}: mean "
            f"log-prob {o['mean_logprob']:.4f}, top-1 {o['top1_rate']:.4f}")
    if "mean_kl" in o:
        line += f", KL {o['mean_kl']:.6f}, agreement {o['top1_agreement']:.4f}"
    rows = [f"  [{b['start']}, {b['end']}): log-prob {b['mean_logprob']:.4f}  top-1 {b['top1_rate']:.3f}"
            + (f"  KL {b['mean_kl']:.6f}  agree {b['top1_agreement']:.3f}" if "mean_kl" in b else "")
            for b in result["buckets"]]
    return "\n".join([line, *rows])
