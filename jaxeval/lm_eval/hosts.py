"""Engine calls of the lm-eval adapter, on one process or on every process of a multi-host run.

lm-eval runs on process 0 only and sees one process (rank 0, world size 1), so its task
building, filters, metrics and output files are those of a one-process run. Every engine call
process 0 makes (loading the model, a batch of reads, a batch of generations) is first
broadcast through JAX's coordination service (jaxeval.run.multihost.exchange), then run on
every process:

- a mesh spanning processes: every process runs the whole call (each computation needs all of
  them, and they decide alike: same inputs, same tokenizer, same stopping);
- the model on each process's own devices (no mesh, or a mesh within each host; host_split
  "auto"): process p runs the p-th of n contiguous shares of the call and the results are
  gathered back on process 0 (data parallel). Sampled generations then depend on the process count (the draw of a
  prompt is keyed by its index within a process's share); greedy ones do not.

The other processes run follow(): they load the model as process 0 asks (or take one already
loaded), then serve calls until process 0 sends "stop" (close_followers(): called by
`python -m jaxeval.lm_eval` when lm-eval returns or fails, and at interpreter exit).
"""

from __future__ import annotations

import atexit

import numpy as np

from jaxeval.engine.backend import LanguageModel, ReadResult, SharedReads

FOLLOW_TIMEOUT_S = 7 * 24 * 3600  # followers wait this long for process 0's next call (task loading, metrics)
_leader = {"followers": False}  # process 0: whether followers are waiting for calls


def process_info() -> tuple[int, int]:
    import jax

    return jax.process_index(), jax.process_count()


def spans_processes(mesh) -> bool:
    devices = getattr(mesh, "devices", None)
    return devices is not None and len({d.process_index for d in np.asarray(devices).flat}) > 1


def broadcast(call: dict | None, timeout_s: int = 3600) -> dict:
    """Process 0's call on every process (the others pass None)."""
    from jaxeval.run.multihost import exchange

    return exchange(call or {}, timeout_s=timeout_s)[0]


def open_followers() -> None:
    if not _leader["followers"]:
        _leader["followers"] = True
        atexit.register(close_followers)


def close_followers() -> None:
    """Process 0: release the followers (they return from follow()). No-op on one process or twice."""
    if _leader["followers"]:
        _leader["followers"] = False
        broadcast({"op": "stop"})


class EngineCalls(LanguageModel):
    """The model contract (jaxeval.engine.backend.LanguageModel) over a jaxeval Model, run on every
    process of the run (see the module docstring); process 0 gets the results, the others None."""

    def __init__(self, model, host_split: str = "auto"):
        if host_split not in ("auto", "on", "off"):
            raise ValueError(f"host_split={host_split!r}: choose auto, on or off")
        self.model = model
        self.index, self.count = process_info()
        spans = spans_processes(model.mesh)
        if host_split == "on" and spans:
            raise ValueError("host_split=on: the model's mesh spans processes, so every process must run every "
                             "computation (use auto or off)")
        self.split = self.count > 1 and (host_split == "on" or host_split == "auto" and not spans)
        self.read_tokens = {"run": 0, "without_prefix_sharing": 0}  # this process's reads

    @property
    def config(self):
        return self.model.config

    @property
    def tokenizer(self):
        return self.model.tokenizer

    # process 0 ------------------------------------------------------------------------------
    def read_many(self, requests, *, batch_size: int = 1, share_prefixes: bool = True):
        """(ids [T], positions [K], tokens [K, C]) per read -> SharedReads over every process's share (process 0)."""
        settings = dict(batch_size=int(batch_size), share_prefixes=bool(share_prefixes))
        requests = list(requests)
        payload = {"reads": [[np.asarray(a).tolist() for a in r] for r in requests], **settings} \
            if self.count > 1 else None
        return self._call("read", payload, reads=requests, **settings)

    def generate(self, prompts, max_new_tokens: int, stop=None, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int = 0, *, stop_token_ids=None, min_new_tokens: int = 0, batch_size: int = 8) -> list:
        """-> jaxeval.engine.generate.Generation per prompt (process 0)."""
        settings = dict(max_new_tokens=int(max_new_tokens), stop=list(stop or []), temperature=float(temperature),
                        top_p=float(top_p), seed=int(seed), stop_token_ids=list(map(int, stop_token_ids or [])),
                        min_new_tokens=int(min_new_tokens), batch_size=int(batch_size))
        payload = {"prompts": [list(map(int, p)) for p in prompts], **settings} if self.count > 1 else None
        return self._call("generate", payload, prompts=list(prompts), **settings)

    def _call(self, op: str, payload, **arguments):
        if self.count > 1:
            broadcast({"op": op, **payload})
        return self.run(op, **arguments)

    # every process --------------------------------------------------------------------------
    def run(self, op: str, **arguments):
        """Run a call (this process's share when split); process 0 gets every result, in order."""
        items_key = "reads" if op == "read" else "prompts"
        items = arguments.pop(items_key)
        # contiguous shares: sorted reads that share prefixes stay on one process
        share = items[len(items) * self.index // self.count:len(items) * (self.index + 1) // self.count] \
            if self.split else items
        if op == "read":
            shared = self.model.read_many([tuple(np.asarray(a, np.int32) for a in r) for r in share],
                                          **arguments) if share else SharedReads([], 0, 0, 0)
            self.read_tokens["run"] += shared.tokens_run
            self.read_tokens["without_prefix_sharing"] += shared.tokens_naive
            if not self.split:
                return shared
            return self._gathered(shared.results, _encode_read, _decode_read,
                                  counts=[shared.tokens_run, shared.tokens_naive, shared.prefixes])
        mine = self.model.generate(share, arguments["max_new_tokens"], stop=arguments["stop"] or None,
                                   temperature=arguments["temperature"], top_p=arguments["top_p"],
                                   seed=arguments["seed"], stop_token_ids=arguments["stop_token_ids"] or None,
                                   min_new_tokens=arguments["min_new_tokens"],
                                   batch_size=arguments["batch_size"]) if share else []
        return self._gathered(mine, _encode_generation, _decode_generation) if self.split else mine

    def _gathered(self, mine: list, encode, decode, counts=None):
        """Every process's results, in share order, on process 0 (reads: SharedReads with the counts summed)."""
        from jaxeval.run.multihost import exchange

        gathered = exchange({"results": [encode(r) for r in mine], "counts": counts})
        if self.index != 0:
            return None
        results = [decode(result) for payload in gathered for result in payload["results"]]
        if counts is None:
            return results
        return SharedReads(results, *(sum(payload["counts"][i] for payload in gathered) for i in range(3)))


def load_for_lm_eval(load: dict):
    """The jaxeval Model described by JaxevalLM's load settings (every process of a run loads alike):
    "options", the fields of a jaxeval.options.model.ModelOptions, and "tokenizer", another folder's."""
    from jaxeval.api import load_model
    from jaxeval.options.model import ModelOptions

    options, tokenizer = ModelOptions.of(load["options"]), load.get("tokenizer")
    model = load_model(options.model, **options.load_arguments())
    if tokenizer is not None:
        from transformers import AutoTokenizer

        model.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
    return model


def follow(model=None, **settings) -> None:
    """Processes other than 0: serve process 0's engine calls until it sends "stop".

    model: a jaxeval Model already loaded here (process 0 then passed one to JaxevalLM too);
    without it, the model is loaded as process 0's JaxevalLM asks (every process loads its own
    shard of the weights). settings: host_split, as process 0's.
    """
    index, count = process_info()
    if index == 0:
        raise RuntimeError("follow() runs on processes other than 0; process 0 runs lm-eval")
    calls = EngineCalls(model, settings.get("host_split", "auto")) if model is not None else None
    while True:
        call = broadcast(None, timeout_s=FOLLOW_TIMEOUT_S)
        op = call.pop("op", None)
        if op == "stop":
            return
        if op == "init":
            if call.get("preloaded"):
                if model is None:
                    raise RuntimeError("process 0 passed a loaded model to JaxevalLM: call follow(model=...) here")
            else:
                model = load_for_lm_eval(call["load"])
            calls = EngineCalls(model, call.get("host_split", "auto"))
        elif op in ("read", "generate"):
            if calls is None:
                raise RuntimeError(f"process 0 sent {op!r} before the model was loaded")
            calls.run(op, **call)
        else:
            raise RuntimeError(f"unknown call {op!r} from process 0")


def _encode_read(result) -> dict:
    return {"top1": np.asarray(result.top1).tolist(), "logprobs": np.asarray(result.logprobs).tolist()}


def _decode_read(payload: dict):
    return ReadResult(top1=np.asarray(payload["top1"], np.int32), logprobs=np.asarray(payload["logprobs"], np.float32))


def _encode_generation(gen) -> dict:
    return {"tokens": list(gen.tokens), "text": gen.text, "finish_reason": gen.finish_reason}


def _decode_generation(payload: dict):
    from jaxeval.engine.generate import Generation

    return Generation(tokens=payload["tokens"], text=payload["text"], finish_reason=payload["finish_reason"])
