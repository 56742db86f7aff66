"""One side of a `jaxeval bench` measurement, in its own process so its peak RSS is its own.

    python -m jaxeval.bench.worker SIDE FOLDER OPTIONS_JSON      (SIDE: jaxeval | transformers)

Loads the model once, answers {"ready": ...}, then reads one JSON command per line on stdin
(read, generate, rules, matmul, exit) and writes one JSON answer per line. The protocol has its
own descriptor: anything a library prints on stdout goes to stderr instead.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

import numpy as np

from jaxeval.engine.backend import LanguageModel
from jaxeval.plan.hardware import measure_matmul


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def random_ids(n: int, vocab: int, seed: int = 0) -> np.ndarray:
    """The bench's token ids: the same on both sides (ids 3.. avoid the usual special ids)."""
    return np.random.RandomState(seed).randint(3, vocab, size=n).astype(np.int32)


class CompileLog:
    """XLA compilations seen through jax.monitoring (every compile, persistent-cache hits included)."""

    def __init__(self):
        import jax.monitoring as monitoring

        self.events: list[tuple[str, float]] = []
        self.cache_hits = 0

        def on_duration(event, duration, **kwargs):
            if event == "/jax/core/compile/backend_compile_duration":
                self.events.append((str(kwargs.get("fun_name", "?")), float(duration)))

        def on_event(event, **kwargs):
            if event == "/jax/compilation_cache/cache_hits":
                self.cache_hits += 1

        monitoring.register_event_duration_secs_listener(on_duration)
        monitoring.register_event_listener(on_event)

    def mark(self) -> tuple[int, int]:
        return len(self.events), self.cache_hits

    def since(self, mark: tuple[int, int]) -> dict:
        new = self.events[mark[0]:]
        by_function: dict[str, int] = {}
        for name, _ in new:
            by_function[name] = by_function.get(name, 0) + 1
        return {"count": len(new), "seconds": round(sum(s for _, s in new), 3), "by_function": by_function,
                "persistent_cache_hits": self.cache_hits - mark[1]}


def overrides(options: dict) -> dict:
    """The config fields --max_position_embeddings replaces, the same on both sides."""
    n = options.get("max_position_embeddings")
    return {} if n is None else {"max_position_embeddings": n}


class JaxevalSide:
    def __init__(self, folder: str, options: dict):
        import jax

        self.log = CompileLog()
        from jaxeval.api import load_model  # not the package: its __init__ reaches the run flow (evaluate)

        self.jax = jax
        self.model = load_model(folder, dtype=options["dtype"], attention=options["attention"],
                                prefill_chunk=options["prefill_chunk"], **overrides(options))
        self.info = {"platform": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
                     "dtype": self.model.dtype, "jax": jax.__version__,
                     "parameters": int(sum(x.size for x in jax.tree.leaves(self.model._params)))}

    def _timed(self, fn) -> dict:
        mark = self.log.mark()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"seconds": seconds, "cpu_seconds": cpu, "compile": self.log.since(mark), "peak_rss_mb": peak_rss_mb(),
                **out}

    def read(self, tokens: int) -> dict:
        ids = random_ids(tokens, self.model.config.vocab_size)
        positions = np.arange(1, tokens)

        def run():
            result = self.model.read(ids, positions, ids[positions])
            return {"mean_logprob": float(np.mean(result.logprobs)), "finite": bool(np.isfinite(result.logprobs).all())}

        return self._timed(run) | {"jit_cache_sizes": self.jit_cache_sizes()}

    def generate(self, batch: int, prompt_tokens: int, new_tokens: int) -> dict:
        from jaxeval.engine.generate import generate

        prompts = [random_ids(prompt_tokens, self.model.config.vocab_size, seed=1 + row) for row in range(batch)]

        def run():
            out = generate(self.model._params, self.model.config, self.model.runtime, prompts, new_tokens,
                           eos_token_ids=(), batch_size=batch)
            return {"new_tokens": sum(len(g.tokens) for g in out), "first_row": out[0].tokens}

        return self._timed(run) | {"jit_cache_sizes": self.jit_cache_sizes()}

    def decode_step(self, rows: int, slots: list[int], positions: dict, repeats: int) -> dict:
        """One decode step of `rows` rows per cache length and position, through the cache-kind contract
        generate decodes with (jaxeval.engine.decode_cache): a batch whose cache holds exactly `slots`,
        a first step per cache (compile), then `repeats` steps per (slots, position) interleaved, so a
        slow moment of a shared machine hits every variant alike. positions: name -> position, an int
        or "late" (slots - 2: attention reads the whole cache). Wall and process CPU seconds per step."""
        from jaxeval.engine.decode_cache import new_batch
        from jaxeval.engine.generate import cache_type
        from jaxeval.models.sharding import host_array

        config, runtime, params = self.model.config, self.model.runtime, self.model._params
        prompt = 2  # the prompt only fixes the cache length: no prefill, the cache stays zero
        steps, mark = {}, self.log.mark()
        for s in slots:
            batch = new_batch(config, runtime, [random_ids(prompt, config.vocab_size, seed=1 + r) for r in range(rows)],
                              list(range(rows)), s - prompt + 1, seed=0, temperature=0.0, top_p=1.0)
            if batch.cache_len != s:
                raise ValueError(f"{s} cache slots is not a length of the engine's cache ladder "
                                 f"(a batch asking for it gets {batch.cache_len})")
            state = {"cache": cache_type(config, runtime).init(config, runtime, batch)}
            tokens = host_array(random_ids(batch.rows, config.vocab_size, seed=99), runtime.mesh)
            for name, where in positions.items():
                p = s - 2 if where == "late" else int(where)
                if not 0 <= p < s - 1:
                    raise ValueError(f"position {p} is outside a cache of {s} slots")
                at = host_array(np.full(batch.rows, p, np.int32), runtime.mesh)

                def step(batch=batch, state=state, tokens=tokens, at=at, p=p):  # fed: the rope of p + 1 tokens
                    chosen, _, state["cache"] = state["cache"].step(params, config, runtime, batch, tokens, at,
                                                                    p + 1 - prompt)
                    self.jax.block_until_ready(chosen)

                steps[(s, name)] = (p, step)
        for _, step in steps.values():
            step()  # compile (one program per cache length) and warm up
        compiled = self.log.since(mark)
        mark = self.log.mark()
        wall = {key: [] for key in steps}
        cpu = {key: [] for key in steps}
        for _ in range(repeats):
            for key, (_, step) in steps.items():
                w, c = time.perf_counter(), time.process_time()
                step()
                wall[key].append(time.perf_counter() - w)
                cpu[key].append(time.process_time() - c)
        return {"rows": rows, "repeats": repeats, "compile_first_calls": compiled,
                "compile_timed_calls": self.log.since(mark)["count"], "peak_rss_mb": round(peak_rss_mb(), 1),
                "steps": [{"slots": s, "position_name": name, "position": p, "wall_s": wall[(s, name)],
                           "cpu_s": cpu[(s, name)]} for (s, name), (p, _) in steps.items()]}

    def rules(self, reuse: bool, limit: int) -> dict:
        from jaxeval.benchmarks.agent_bench import load_split
        from jaxeval.benchmarks.agent_bench.defaults import EMBEDDED_AGENT_DATA
        from jaxeval.benchmarks.agent_bench.rules_run import run_rules

        if self.model.tokenizer is None:
            raise ValueError("the model folder has no tokenizer: the rules configs need one")
        items = {(config, "8k"): load_split(EMBEDDED_AGENT_DATA, config, "8k")[:limit]
                 for config in ("rules_en", "rules_cs", "rules_de")}
        backend = self.model if reuse else _ReadOnly(self.model)

        def run():
            tokens = run_rules(backend, self.model.tokenizer, items, "text")["tokens"]
            return {"items": sum(len(v) for v in items.values()), "sequences": tokens["rules_sequences_read"],
                    "tokens_run": tokens["rules_tokens_run"], "tokens_naive": tokens["rules_tokens_naive"]}

        return self._timed(run)

    def matmul(self, n: int, repeats: int) -> dict:
        return measure_matmul(n, repeats)

    def jit_cache_sizes(self) -> dict:
        """Executables held by each engine entry point (one per shape bucket)."""
        from jaxeval.engine import generate, read  # noqa: F401  (imported: counted even before a first call)
        from jaxeval.engine.compiles import compile_counts

        return compile_counts()


class _ReadOnly(LanguageModel):
    """The model sharing no prefix: the rules configs then read every sequence from scratch."""

    def __init__(self, model):
        self.model, self.config, self.tokenizer = model, model.config, model.tokenizer

    def read_many(self, requests, *, batch_size: int = 1, share_prefixes: bool = True):
        return self.model.read_many(requests, batch_size=batch_size, share_prefixes=False)


class TransformersSide:
    def __init__(self, folder: str, options: dict):
        import torch
        import transformers
        from transformers import AutoModelForCausalLM

        self.torch = torch
        torch.set_grad_enabled(False)
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[options["dtype"]]
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **overrides(options)).eval()
        self.vocab = self.model.config.get_text_config().vocab_size
        self.info = {"transformers": transformers.__version__, "torch": torch.__version__,
                     "attn_implementation": self.model.config._attn_implementation,
                     "threads": torch.get_num_threads()}

    def read(self, tokens: int) -> dict:
        """A plain scorer: model(ids).logits ([1, T, V] float32), then log-probs of the next tokens."""
        ids = self.torch.from_numpy(random_ids(tokens, self.vocab)).long()[None]
        t0, c0 = time.perf_counter(), time.process_time()
        logits = self.model(ids).logits[0].float()
        picked = []
        for s in range(0, tokens - 1, 1024):  # log-softmax by row blocks: no second [T, V] array
            block = logits[s:min(s + 1024, tokens - 1)]
            target = ids[0, s + 1:s + 1 + block.shape[0], None]
            picked.append(block.gather(-1, target)[:, 0] - self.torch.logsumexp(block, dim=-1))
        logprobs = self.torch.cat(picked)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak_rss_mb(), "mean_logprob": float(logprobs.mean()),
                "finite": bool(self.torch.isfinite(logprobs).all())}

    def generate(self, batch: int, prompt_tokens: int, new_tokens: int) -> dict:
        prompts = np.stack([random_ids(prompt_tokens, self.vocab, seed=1 + row) for row in range(batch)])
        ids = self.torch.from_numpy(prompts).long()
        t0, c0 = time.perf_counter(), time.process_time()
        out = self.model.generate(ids, attention_mask=self.torch.ones_like(ids), max_new_tokens=new_tokens,
                                  min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        new = out[:, prompt_tokens:]
        return {"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak_rss_mb(), "new_tokens": int(new.numel()),
                "first_row": new[0].tolist()}


SIDES = {"jaxeval": JaxevalSide, "transformers": TransformersSide}


def main() -> None:
    side, folder, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # libraries' prints go to stderr; the protocol keeps its own descriptor
    sys.stdout = sys.stderr

    def answer(message: dict) -> None:
        channel.write(json.dumps(message) + "\n")

    t0 = time.perf_counter()
    try:
        worker = SIDES[side](folder, options)
    except Exception as e:
        answer({"error": f"{side}: could not load {folder}: {type(e).__name__}: {e}"})
        return
    answer({"ready": True, "load_s": time.perf_counter() - t0, "peak_rss_mb": peak_rss_mb(), "info": worker.info})
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        if op == "exit":
            return
        try:
            answer(getattr(worker, op)(**command))
        except Exception as e:  # reported to the parent, which records it and goes on
            answer({"error": f"{side} {op}: {type(e).__name__}: {' '.join(str(e).split())[:1000]}"})


if __name__ == "__main__":
    main()
