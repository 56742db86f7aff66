"""`jaxeval bench`: flags, what can be compared, and the run that writes the JSON."""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from jaxeval.bench import report as reports
from jaxeval.bench.measure import BenchError, run_phases
from jaxeval.bench.shapes import SHAPES, shape_folder
from jaxeval.io.inputs import read_json
from jaxeval.plan.flops import read_flops


def add_arguments(p: argparse.ArgumentParser) -> None:
    from jaxeval.options.model import ModelOptions
    from jaxeval.options.settings import add_flags

    add_flags(p, ModelOptions, names=("model",), defaults={"model": "llama-57m"},
              helps={"model": f"a HF safetensors folder, or a named shape with random weights ({', '.join(SHAPES)})"})
    p.add_argument("--lengths", default=None,
                   help="comma-separated read lengths (8k, 32k, 4096, ...); default: the shape's (llama-57m: 8k,32k), "
                        "8k for a folder")
    p.add_argument("--repeats", type=int, default=2, help="timed calls per side after the first (compiling) call")
    p.add_argument("--batches", default="8", help="generation batch sizes (empty: no generation)")
    p.add_argument("--prompt_tokens", type=int, default=4096,
                   help="generation: prompt length (issue 27's target row: batch 8, 4,096 prompt, 128 new tokens)")
    p.add_argument("--new_tokens", type=int, default=128, help="generation: greedy tokens per prompt")
    p.add_argument("--decode_slots", default="256,4096",
                   help="decode step: cache lengths (rungs of the engine's ladder) timed at an early and a late "
                        "position (empty: no decode-step phase)")
    p.add_argument("--decode_rows", type=int, default=8, help="decode step: rows of the batch")
    p.add_argument("--decode_repeats", type=int, default=20, help="decode step: timed steps per (slots, position)")
    p.add_argument("--rules_limit", type=int, default=2,
                   help="rules configs: first N items of each of rules_en/cs/de (embedded 8k sample); 0: skip")
    p.add_argument("--rules_repeats", type=int, default=1, help="rules: timed passes per variant after the first")
    p.add_argument("--transformers", choices=("auto", "off"), default="auto",
                   help="auto: compare with transformers' PyTorch models when torch is installed")
    add_flags(p, ModelOptions, names=("dtype", "attention", "prefill_chunk"),  # the model flags bench times with
              helps={"dtype": "auto: the folder's torch_dtype (named shapes: float32, llama-8b bfloat16)"})
    p.add_argument("--matmul_n", type=int, default=2048, help="side of the float32 matmul that calibrates the peak")
    p.add_argument("--max_position_embeddings", type=int, default=None,
                   help="time reads past the checkpoint's window (e.g. SmolLM2-135M's 8,192 at 32k): the config field "
                        "overridden on both sides; speed only, the log-probs past the trained window mean nothing")
    p.add_argument("--estimate", action="store_true",
                   help="no measurement: the analytic read time of --lengths on each named accelerator (v5e, v5p, "
                        "v6e, h100, h200) at --mfu of its bf16 peak, and whether weights + KV fit one chip")
    p.add_argument("--mfu", type=float, default=None, help="--estimate: share of the peak a read reaches (default 0.4)")
    p.add_argument("--out", default="bench.json", help="the JSON written (jaxeval bench --help; docs/performance.md)")


def parse_lengths(text: str) -> list[int]:
    lengths = []
    for part in (x.strip().lower() for x in text.split(",") if x.strip()):
        try:
            lengths.append(int(part[:-1]) * 1024 if part.endswith("k") else int(part))
        except ValueError:
            raise BenchError(f"bench: --lengths: {part!r} is not a length such as 8k or 4096") from None
    if not lengths or any(n < 2 for n in lengths):
        raise BenchError(f"bench: --lengths {text!r}: give lengths of at least 2 tokens")
    return lengths


def _integers(text: str, flag: str) -> list[int]:
    try:
        return [_positive(int(x), flag) for x in text.split(",") if x.strip()] if text else []
    except ValueError:
        raise BenchError(f"bench: {flag} {text!r}: give comma-separated positive integers") from None


def _positive(value: int, flag: str, zero_ok: bool = False) -> int:
    if value < (0 if zero_ok else 1):
        raise BenchError(f"bench: {flag} must be {'>= 0' if zero_ok else 'positive'}, got {value}")
    return value


def resolve_model(name: str) -> tuple[str, Path, dict]:
    """-> (display name, HF folder, its config.json)."""
    if name in SHAPES:
        folder = shape_folder(name)
    else:
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            raise BenchError(f"bench: {name}: neither a named shape ({', '.join(SHAPES)}) nor a model folder "
                             "with config.json")
    # a config.json that is unreadable, not UTF-8 or not JSON is one BenchError naming it
    return (name if name in SHAPES else folder.name), folder, read_json(folder / "config.json", BenchError)


def transformers_unavailable(folder: Path, mode: str) -> str | None:
    """Why the transformers side cannot run (None: it can)."""
    if mode == "off":
        return "turned off (--transformers off)"
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (pip install torch==2.13.0, or jaxeval's test extra)"
    if not any(folder.glob("*.safetensors")):
        return f"{folder} holds no safetensors weights (transformers reads HF safetensors folders)"
    return None


def available_memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def hardware() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    total = next((int(line.split()[1]) * 1024 for line in _lines("/proc/meminfo") if line.startswith("MemTotal:")), None)
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "memory_gb": round(total / 2 ** 30, 1) if total else None,
            "python": platform.python_version()}


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def command_line(args) -> str:
    """The command that reproduces this run, every flag spelled out."""
    flags = ("model", "lengths", "repeats", "batches", "prompt_tokens", "new_tokens", "decode_slots", "decode_rows",
             "decode_repeats", "rules_limit", "rules_repeats", "transformers", "dtype", "attention", "prefill_chunk",
             "matmul_n", "max_position_embeddings", "mfu", "out")
    line = "jaxeval bench " + " ".join(f"--{f} {shlex.quote(str(getattr(args, f)))}" for f in flags
                                       if getattr(args, f) is not None)  # quoted: an empty --batches stays a value
    return line + (" --estimate" if getattr(args, "estimate", False) else "")


def commit(root: Path | None = None) -> dict:
    """{"commit": `git rev-parse HEAD` of the checkout jaxeval runs from, "commit_dirty": whether tracked files
    differ from it}; both None outside a checkout (an installed copy, even in a venv inside some repository)."""
    root = (root or Path(__file__).resolve().parents[2]).resolve()
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if head.returncode or Path(head.stdout.split()[0]).resolve() != root:
            return {"commit": None, "commit_dirty": None}
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "commit_dirty": None}
    return {"commit": head.stdout.split()[1], "commit_dirty": bool(dirty)}


def cmd_estimate(args) -> int:
    """--estimate: analytic figures only (no weights are written or read, so llama-8b costs nothing here)."""
    from jaxeval.bench import analytic
    from jaxeval.models.config import config_from_hf
    from jaxeval.plan.hardware import DEFAULT_MFU
    from jaxeval.io.json_files import write_json_atomic

    if args.model in SHAPES:
        name, raw, where = args.model, SHAPES[args.model][0], f"named shape {args.model}"
    else:
        name, folder, raw = resolve_model(args.model)
        where = str(folder / "config.json")
    config = config_from_hf(raw, where=where)
    lengths = parse_lengths(args.lengths) if args.lengths else (list(SHAPES[args.model][1]) if args.model in SHAPES
                                                                 else [8192])
    mfu = DEFAULT_MFU if args.mfu is None else args.mfu
    if not 0 < mfu <= 1:
        raise BenchError(f"bench: --mfu must be in (0, 1], got {mfu}")
    dtype = "float32" if args.dtype == "float32" else "bfloat16"
    estimates = [analytic.read_estimates(config, n, dtype, mfu) for n in lengths]
    print(analytic.table(estimates, name))
    report = {"schema": reports.SCHEMA, "kind": "estimate", "model": name, "command": command_line(args),
              "estimates": estimates}
    print(f"wrote {write_json_atomic(args.out, report)}")
    return 0


def cmd_bench(args) -> int:
    from jaxeval.engine.buckets import length_bucket
    from jaxeval.io.outputs import check_output_file
    from jaxeval.models.config import config_from_hf
    from jaxeval.io.json_files import write_json_atomic

    check_output_file(args.out)
    if args.estimate:
        return cmd_estimate(args)
    lengths = parse_lengths(args.lengths) if args.lengths else (
        list(SHAPES[args.model][1]) if args.model in SHAPES else [8192])
    args.lengths = ",".join(map(str, lengths))  # the command line spells the lengths run
    batches = _integers(args.batches, "--batches")
    decode_slots = _integers(args.decode_slots, "--decode_slots")
    plan = {"lengths": lengths, "repeats": _positive(args.repeats, "--repeats", zero_ok=True), "batches": batches,
            "prompt_tokens": _positive(args.prompt_tokens, "--prompt_tokens"),
            "new_tokens": _positive(args.new_tokens, "--new_tokens"), "decode_slots": decode_slots,
            "decode_rows": _positive(args.decode_rows, "--decode_rows"),
            "decode_repeats": _positive(args.decode_repeats, "--decode_repeats"),
            "rules_limit": _positive(args.rules_limit, "--rules_limit", zero_ok=True),
            "rules_repeats": _positive(args.rules_repeats, "--rules_repeats", zero_ok=True),
            "matmul_n": _positive(args.matmul_n, "--matmul_n")}
    name, folder, raw = resolve_model(args.model)  # a named shape's folder is written on first use
    if args.max_position_embeddings is not None:
        raw = raw | {"max_position_embeddings": _positive(args.max_position_embeddings, "--max_position_embeddings")}
    config = config_from_hf(raw, where=str(folder / "config.json"))
    for tokens in lengths:
        if tokens - 1 > config.context_limit:
            raise BenchError(f"bench: a read of {tokens} tokens exceeds the model's context ({config.context_source})")
    for slots in decode_slots:
        if not 102 < slots <= config.context_limit or length_bucket(slots) != slots:
            raise BenchError(f"bench: --decode_slots {slots}: give cache lengths of the engine's ladder (256, 512, "
                             f"1024, ...; the early position is 100) within the model's context ({config.context_source})")
    dtype = args.dtype if args.dtype != "auto" else ("bfloat16" if raw.get("torch_dtype", raw.get("dtype")) == "bfloat16"
                                                     else "float32")
    options = {"dtype": dtype, "attention": args.attention, "prefill_chunk": args.prefill_chunk,
               "max_position_embeddings": args.max_position_embeddings}
    reason = transformers_unavailable(folder, args.transformers)
    if reason:
        print(f"bench: transformers comparison unavailable: {reason}", file=sys.stderr)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # workers share one accelerator in turn
    load_before, revision = os.getloadavg(), commit()  # before the run: the code measured
    started = datetime.datetime.now(datetime.timezone.utc)

    def report_of(raw_out: dict, complete: bool) -> dict:
        report = build_report(name, folder, config, options, plan, raw_out, reason, load_before, started,
                              command_line(args), revision)
        return report | {"complete": complete}

    def phase_done(raw_out: dict) -> None:  # a long run keeps what it measured if it is stopped
        write_json_atomic(args.out, report_of(raw_out, complete=False))

    raw_out = run_phases(str(folder), options, plan, reason, lambda t: 4 * t * config.vocab_size,
                         available_memory_bytes(), progress=lambda m: print(m, file=sys.stderr, flush=True),
                         phase_done=phase_done)
    report = report_of(raw_out, complete=True)
    print(reports.table(report))
    print(f"wrote {write_json_atomic(args.out, report)}")
    return 0


def build_report(name, folder, config, options, plan, raw_out, reason, load_before, started, command,
                 revision: dict | None = None) -> dict:
    from jaxeval.engine.compile_cache import compile_cache_dir

    peak = max((m["flops_per_s"] for m in raw_out["matmul"]), default=None)
    info = raw_out["worker_info"]
    report = {
        "schema": reports.SCHEMA, "date": started.isoformat(timespec="seconds"),
        "command": command, **(revision or {"commit": None, "commit_dirty": None}),
        "targets_from": reports.TARGETS_FROM,
        "hardware": hardware() | {"platform": info["jaxeval"]["platform"], "device_kind": info["jaxeval"]["device_kind"]},
        "load": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "model": {"name": name, "folder": str(folder), "dtype": options["dtype"], "attention": options["attention"],
                  "prefill_chunk": options["prefill_chunk"],
                  "max_position_embeddings_override": options["max_position_embeddings"], "parameters": info["jaxeval"]["parameters"],
                  "model_type": config.model_type, "layers": config.num_layers, "hidden": config.hidden_size,
                  "heads": config.num_heads, "kv_heads": config.num_kv_heads, "head_dim": config.head_dim,
                  "intermediate": config.intermediate_size, "vocab": config.vocab_size,
                  "windows": list(config.layer_windows)},
        "versions": {"jax": info["jaxeval"]["jax"], **({k: info["transformers"][k] for k in ("transformers", "torch")}
                                                     if "transformers" in info else {})},
        "transformers": {"available": reason is None, "reason": reason,
                         **({k: info["transformers"][k] for k in ("attn_implementation", "threads")}
                            if "transformers" in info else {})},
        "matmul_peak": {"n": plan["matmul_n"], "flops_per_s": peak,
                        "samples_flops_per_s": [m["flops_per_s"] for m in raw_out["matmul"]]},
        "plan": plan,
        "compile_cache": str(compile_cache_dir()) if compile_cache_dir() else None,
        "read": [reports.read_entry(r, read_flops(config, r["tokens"] - 1, r["tokens"] - 1), peak)
                 for r in raw_out["read"]],
        "generate": [reports.generate_entry(g, plan["prompt_tokens"], plan["new_tokens"]) for g in raw_out["generate"]],
        "decode_step": reports.decode_entry(raw_out["decode_step"], config, options["dtype"]),
        "rules": reports.rules_entry(raw_out["rules"]),
    }
    report["targets"] = reports.check_targets(report)
    return report
