"""Reads before and after issue 23's model contract and one read loop: the same arrays, bit for bit.

Runs single reads, batched reads, prefix-reuse reads (and their token counts), final states and a
two-model compare through jaxeval.api.Model, on the embedded model (float32 and bfloat16, the xla
and chunked backends, an int8 KV cache), on a hybrid (Qwen3.5, Gated DeltaNet) and on a mesh of 8
simulated devices, and saves every array. Run it with PYTHONPATH at each tree (the base, 2ffffe8,
has read_batch / read_many(requests, batch_size); the contract has read_many(requests, *,
batch_size, share_prefixes)), then compare:

    python scripts/read_identity_check.py hybrid /tmp/rc/qwen3_5          # once (needs torch)
    PYTHONPATH=/work/wt-read-base python scripts/read_identity_check.py run --api base --out /tmp/rc/base.npz \
        --hybrid /tmp/rc/qwen3_5
    PYTHONPATH=$PWD python scripts/read_identity_check.py run --api contract --out /tmp/rc/new.npz \
        --hybrid /tmp/rc/qwen3_5
    python scripts/read_identity_check.py compare /tmp/rc/base.npz /tmp/rc/new.npz
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np

TINY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jaxeval", "assets", "tiny_llama")


def requests_of(vocab: int, seed: int = 0) -> dict[str, list]:
    """Request sets: lone texts of several rungs, and texts sharing long chunk-aligned prefixes."""
    rng = np.random.default_rng(seed)
    lone = []
    for length, k, width in ((40, 5, 0), (300, 17, 0), (700, 9, 3), (260, 1, 0), (1100, 40, 2)):
        ids = rng.integers(1, vocab, length)
        positions = np.sort(rng.choice(np.arange(1, length), k, replace=False))
        tokens = ids[positions] if width == 0 else rng.integers(0, vocab, (k, width))
        lone.append((ids, positions, tokens))
    base = rng.integers(1, vocab, 900)
    shared = []
    for n, cut in enumerate((600, 650, 700, 900, 520, 880)):
        ids = np.concatenate([base[:cut], rng.integers(1, vocab, 60 + 10 * n)])
        positions = np.arange(cut - 2, ids.size, 7)
        shared.append((ids, positions, ids[positions]))
    return {"lone": lone, "shared": shared + lone[:2]}


def put(out: dict, key: str, result) -> None:
    out[f"{key}/top1"], out[f"{key}/logprobs"] = result.top1, result.logprobs


def reads(model, api: str, prefix: str, out: dict, vocab: int) -> None:
    sets = requests_of(vocab)
    for n, (ids, positions, tokens) in enumerate(sets["lone"]):
        put(out, f"{prefix}/read{n}", model.read(ids, positions, tokens))
    for batch_size in (1, 4):
        got = (model.read_batch(sets["lone"], batch_size=batch_size) if api == "base"
               else model.read_many(sets["lone"], batch_size=batch_size, share_prefixes=False).results)
        for n, r in enumerate(got):
            put(out, f"{prefix}/batch{batch_size}/{n}", r)
        shared = model.read_many(sets["shared"], batch_size=batch_size)  # both trees: prefixes shared
        for n, r in enumerate(shared.results):
            put(out, f"{prefix}/shared{batch_size}/{n}", r)
        out[f"{prefix}/shared{batch_size}/counts"] = np.array([shared.tokens_run, shared.tokens_naive, shared.prefixes])
    ids = sets["lone"][4][0]
    out[f"{prefix}/states"] = model.final_states(ids, np.array([0, 5, 511, 512, 1099]))
    out[f"{prefix}/stats"] = np.array([model.stats["reads"], model.stats["tokens"]])


def run(api: str, path: str, hybrid: str | None, mesh: bool) -> dict:
    from jaxeval.api import load_model

    out = {}
    if mesh:
        for spec in ("tensor=2,context=4", "data=2,tensor=2,fsdp=2"):
            model = load_model(TINY, dtype="float32", prefill_chunk=256, load_tokenizer=False, mesh=spec)
            reads(model, api, f"mesh[{spec}]", out, 4096)
        return out
    for dtype in ("float32", "bfloat16"):
        for attention in ("xla", "chunked"):
            model = load_model(TINY, dtype=dtype, attention=attention, prefill_chunk=256, load_tokenizer=False)
            reads(model, api, f"tiny/{dtype}/{attention}", out, 4096)
    model = load_model(TINY, dtype="float32", prefill_chunk=128, load_tokenizer=False, kv_cache="int8")
    reads(model, api, "tiny/int8_kv", out, 4096)
    reference = load_model(TINY, dtype="bfloat16", prefill_chunk=128, load_tokenizer=False)
    ids = requests_of(4096)["lone"][4][0]
    for name, values in model.compare(reference, ids, np.arange(1, ids.size, 3)).items():
        out[f"tiny/compare/{name}"] = values
    if hybrid:
        model = load_model(hybrid, dtype="float32", prefill_chunk=128, load_tokenizer=False)
        reads(model, api, "hybrid", out, 256)
    return out


def build_hybrid(folder: str) -> None:
    """A random 6-layer Qwen3.5 (Gated DeltaNet + full attention): tests/models/test_qwen3_5.py's reference."""
    import importlib.util

    import torch
    import transformers

    spec = importlib.util.spec_from_file_location("qwen3_5_test", os.path.join(os.path.dirname(TINY), "..", "..",
                                                                               "tests", "models", "test_qwen3_5.py"))
    test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(test)
    torch.manual_seed(0)
    test.perturb(transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**test.CONFIG))).save_pretrained(folder)


def compare(a_path: str, b_path: str) -> int:
    a, b = np.load(a_path), np.load(b_path)
    if set(a.files) != set(b.files):
        print(f"different arrays: only in {a_path}: {sorted(set(a.files) - set(b.files))[:5]}, "
              f"only in {b_path}: {sorted(set(b.files) - set(a.files))[:5]}")
        return 1
    differ = [k for k in a.files if a[k].shape != b[k].shape or a[k].dtype != b[k].dtype
              or not np.array_equal(a[k], b[k], equal_nan=True)]
    print(f"{len(a.files)} arrays ({sum(a[k].size for k in a.files)} values), {len(differ)} differ"
          + (f": {differ[:10]}" if differ else ": all bit-identical"))
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--api", choices=("base", "contract"), required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--hybrid")
    r.add_argument("--mesh_only", action="store_true", help="(internal) the 8-device part, in a subprocess")
    sub.add_parser("hybrid").add_argument("folder")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = p.parse_args()
    if args.cmd == "hybrid":
        build_hybrid(args.folder)
        return 0
    if args.cmd == "compare":
        return compare(args.a, args.b)
    if args.mesh_only:
        np.savez(args.out, **run(args.api, TINY, None, mesh=True))
        return 0
    out = run(args.api, TINY, args.hybrid, mesh=False)
    mesh_out = args.out + ".mesh.npz"
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, __file__, "run", "--api", args.api, "--out", mesh_out, "--mesh_only"], env=env,
                   check=True)
    with np.load(mesh_out) as mesh:
        out |= {k: mesh[k] for k in mesh.files}
    np.savez(args.out, **out)
    print(f"{args.out}: {len(out)} arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
