"""Checks shared by the MoE family tests (Mixtral, gpt-oss): a transformers model saved with save_pretrained
against jaxeval loading that folder, float32.

- routing_margins: while a transformers forward runs, the smallest gap between the k-th and the (k + 1)-th
  router probability over every token and layer. A gap near float32's rounding (1e-7) is a tie that the
  two implementations may break differently, flipping one token's experts and everything that attends
  to it: a long parity check is only meaningful on a reference without one;
- read_diff: max |log p(next token)| difference over every position of a random text, jaxeval's
  chunked prefill against transformers' forward (through its KV cache in REFERENCE_CHUNK pieces for long
  texts, so eager attention never holds [heads, T, T] scores of the whole text);
- greedy_tokens_match: greedy generation token for token, prompts of two lengths batched together;
- eight_devices_equal_one: 1 device against data x tensor x context = 2 x 2 x 2 simulated CPU devices,
  in a subprocess (JAX fixes its device count when it starts).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers

import jaxeval

TOL = 1e-4
REFERENCE_CHUNK = 2048


def perturb(model, seed):
    """Every parameter random (norm scales around 1), so no expert, bias or sink is left at its init."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            base = 1.0 if "norm" in name else 0.0
            p.copy_(base + torch.randn(p.shape, generator=gen) * (0.3 if "norm" in name else 0.1))
    return model.eval()


@contextlib.contextmanager
def routing_margins(model, top_k: int):
    """Yields a list that fills with one float per routed layer call: min over tokens of p_k - p_(k+1), the
    router's softmax probabilities sorted (each layer's gate returns its logits first)."""
    margins = []

    def record(module, args, out):
        logits = (out[0] if isinstance(out, tuple) else out).float()
        probs = torch.sort(torch.softmax(logits.reshape(-1, logits.shape[-1]), -1), -1, descending=True).values
        margins.append(float((probs[:, top_k - 1] - probs[:, top_k]).min()))

    hooks = [layer.mlp.gate.register_forward_hook(record) for layer in model.model.layers]
    try:
        yield margins
    finally:
        for hook in hooks:
            hook.remove()


def reference_logprobs(model, ids: np.ndarray) -> np.ndarray:
    """float32 [T - 1]: transformers' log p(ids[t + 1] | ids[:t + 1])."""
    tokens = torch.as_tensor(ids)[None]
    pieces = []
    with torch.no_grad():
        if ids.size <= REFERENCE_CHUNK:
            pieces.append(model(tokens).logits[0].float())
        else:
            cache = transformers.DynamicCache(config=model.config)
            for start in range(0, ids.size, REFERENCE_CHUNK):
                piece = tokens[:, start:start + REFERENCE_CHUNK]
                out = model(piece, cache=cache, use_cache=True,
                            cache_position=torch.arange(start, start + piece.shape[1]))
                pieces.append(out.logits[0].float())
    logits = torch.cat(pieces)[:-1]
    return torch.log_softmax(logits, -1).gather(-1, torch.as_tensor(ids[1:])[:, None])[:, 0].numpy()


def read_diff(model, ids: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|jaxeval's log-probs - ref| at every position 1 .. T - 1 (model: a jaxeval.load_model model)."""
    positions = np.arange(1, ids.size)
    return np.abs(model.read(ids, positions, ids[positions]).logprobs - ref)


def greedy_tokens_match(model, torch_model, prompts, max_new_tokens=16) -> None:
    outs = model.generate([p.tolist() for p in prompts], max_new_tokens=max_new_tokens)
    for prompt, out in zip(prompts, outs):
        with torch.no_grad():
            want = torch_model.generate(torch.as_tensor(prompt)[None], max_new_tokens=max_new_tokens,
                                        do_sample=False, pad_token_id=0)[0, len(prompt):].tolist()
        assert out.tokens == want, (len(prompt), out.tokens, want)


def eight_devices_equal_one(folder, vocab: int, length: int = 600, mesh: str = "data=2,tensor=2,context=2",
                            backend: str = "chunked") -> tuple[float, bool, bool]:
    """(max |d log p|, top-1 all equal, greedy tokens all equal) of one device against `mesh`."""
    script = f"""
import json, numpy as np
import jaxeval
ids = np.random.default_rng(5).integers(3, {vocab}, {length})
pos = np.arange(1, {length})
kw = dict(dtype="float32", load_tokenizer=False, prefill_chunk=128, attention={backend!r})
one, mesh = jaxeval.load_model({str(folder)!r}, **kw), jaxeval.load_model({str(folder)!r}, mesh={mesh!r}, **kw)
a, b = one.read(ids, pos, ids[pos]), mesh.read(ids, pos, ids[pos])
prompts = [ids[:50].tolist(), ids[100:130].tolist()]
same = [x.tokens == y.tokens for x, y in zip(one.generate(prompts, 8), mesh.generate(prompts, 8))]
print(json.dumps([float(np.abs(a.logprobs - b.logprobs).max()), bool((a.top1 == b.top1).all()), all(same)]))
"""
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    diff, top1_same, tokens_same = json.loads(out.stdout.strip().splitlines()[-1])
    return diff, top1_same, tokens_same


def load(folder, **kw):
    return jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, **kw)
