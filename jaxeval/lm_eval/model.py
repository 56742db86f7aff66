"""JaxevalLM: jaxeval's engine as the lm-evaluation-harness model `jaxeval`.

    lm_eval --model jaxeval --model_args pretrained=PATH,dtype=bfloat16,mesh=tensor=4 ...   (see __main__.py)
    lm_eval.simple_evaluate(model=JaxevalLM(pretrained=PATH), tasks=[...])

Requests are tokenised and cut exactly as lm-eval's `hf` model (HFLM) does (jaxeval/lm_eval/requests.py;
the (context, continuation) split is lm-eval's own TemplateLM._encode_pair), then run by the
engine: log-likelihoods as teacher-forced reads (Model.read_many: one read per distinct input,
shared chunk-aligned prefixes run once, float32 head), rolling log-likelihoods over lm-eval's
own disjoint windows, generations by Model.generate (greedy, or temperature / top_p sampling).
"""

from __future__ import annotations

import importlib
import json
import os

import numpy as np
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import model_registry, register_model
from lm_eval.models.utils import handle_stop_sequences
from lm_eval.utils import get_rolling_token_windows, make_disjoint_window
from tqdm import tqdm

from jaxeval.lm_eval.hosts import EngineCalls, broadcast, load_for_lm_eval, open_followers, process_info
from jaxeval.lm_eval.requests import gen_settings, generation_text, has_bos_prefix, plan_reads, score_window
from jaxeval.errors import ConfigError
from jaxeval.models.config import CONFIG_OVERRIDES, override_value
from jaxeval.options.model import ModelOptions
from jaxeval.options.settings import names_of, record_of

DEFAULT_MAX_GEN_TOKS = 256  # HFLM.max_gen_toks
AUTO_BATCH_SIZE = 8  # batch_size=auto: rows per decode batch (the engine has no memory probe)
READS_PER_CALL = 512  # engine reads per call (sorted, so shared prefixes stay within one call)
IGNORED_ARGS = ("device", "max_batch_size", "trust_remote_code")  # lm-eval passes these to every model
# jaxeval run's model flags taken as model_args beside the named ones (quantize, kv_cache, mapping, ...; tokenizer
# here is another folder's, loaded as HFLM does)
MODEL_FLAGS = frozenset(names_of(ModelOptions) - {"model", "dtype", "attention", "prefill_chunk", "mesh", "tokenizer",
                                                  "config_overrides"})


class ModelArgsError(ConfigError, ValueError):
    """A bad --model_args value: one line from `python -m jaxeval.lm_eval` (a ConfigError), and still
    the ValueError lm-eval's own callers expect of a model's constructor."""


def _int_arg(name: str, value, minimum: int | None = None) -> int | None:
    """model_args value `name` as an int (lm-eval passes text or numbers), at least minimum."""
    if value is None:
        return None
    try:
        number = int(value) if not isinstance(value, bool) and float(value) == int(float(value)) else None
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or (minimum is not None and number < minimum):
        bound = f" >= {minimum}" if minimum is not None else ""
        raise ModelArgsError(f"jaxeval model_args: {name}={value!r} must be an integer{bound}")
    return number

importlib.import_module("lm_eval.models")  # built-in models first: lm-eval imports them only into an empty registry


def _batch_size(value) -> int:
    text = str(value)
    if text.startswith("auto"):
        return AUTO_BATCH_SIZE
    return _int_arg("batch_size", text, 1)


class JaxevalLM(TemplateLM):
    """lm-eval's LM interface on a jaxeval Model (see the module docstring).

    pretrained: a HF safetensors or jaxeval Orbax folder (or an already loaded jaxeval.Model);
    dtype (auto: float32 on CPU, bfloat16 on accelerators), attention, prefill_chunk, mesh:
    as jaxeval.load_model; any config.json field of jaxeval.models.config.CONFIG_OVERRIDES
    (rope_scaling, max_position_embeddings, ...) is passed to load_model as an override.
    batch_size: rows per generation batch (reads go one sequence at a time, prefixes shared).
    max_length: longest model input (default: the model's context). tokenizer: another folder's
    tokenizer. add_bos_token, prefix_token_id, chat_template_args, enable_thinking: as HFLM.
    seed: sampling seed. host_split: auto | on | off, see jaxeval/lm_eval/hosts.py.
    """

    backend = "causal"

    def __init__(self, pretrained=None, dtype: str = ModelOptions.dtype, attention: str = ModelOptions.attention,
                 prefill_chunk: int = ModelOptions.prefill_chunk, mesh: str | None = ModelOptions.mesh, batch_size=1, max_length: int | None = None, tokenizer: str | None = None,
                 add_bos_token: bool | None = None, prefix_token_id: int | None = None, seed: int = 0,
                 host_split: str = "auto", chat_template_args: dict | None = None, enable_thinking: bool | None = None,
                 **kwargs):
        super().__init__()
        from jaxeval.api import Model
        from jaxeval.engine.distributed import initialize_distributed

        for key in IGNORED_ARGS:
            kwargs.pop(key, None)
        overrides = {key: override_value(key, kwargs.pop(key), "jaxeval model_args")
                     for key in list(kwargs) if key in CONFIG_OVERRIDES}
        model_flags = {key: kwargs.pop(key) for key in list(kwargs) if key in MODEL_FLAGS}  # quantize, kv_cache, ...
        if kwargs:
            raise ModelArgsError(f"jaxeval model_args: unknown {', '.join(sorted(kwargs))}; known: pretrained, "
                             f"{', '.join(sorted(MODEL_FLAGS | {'dtype', 'attention', 'prefill_chunk', 'mesh'}))} "
                             "(the model flags of `jaxeval run`), batch_size, max_length, tokenizer, add_bos_token, "
                             "prefix_token_id, seed, host_split, chat_template_args, enable_thinking and the "
                             f"config.json fields {', '.join(CONFIG_OVERRIDES)}")
        if pretrained is None:
            raise ModelArgsError("jaxeval model_args: pretrained=PATH is required")
        prefill_chunk, seed = _int_arg("prefill_chunk", prefill_chunk, 1), _int_arg("seed", seed, 0)
        max_length, prefix_token_id = _int_arg("max_length", max_length, 1), _int_arg("prefix_token_id", prefix_token_id, 0)
        if host_split not in ("auto", "on", "off"):
            raise ModelArgsError(f"jaxeval model_args: host_split={host_split!r} is not auto, on or off")
        if chat_template_args is not None and not isinstance(chat_template_args, dict):
            raise ModelArgsError(f"jaxeval model_args: chat_template_args must be a mapping, got {chat_template_args!r}")
        # lm-eval's bootstrapped standard errors fork a process pool unless told not to; forking a
        # process running JAX's threads (and, multi-host, its coordination client) can deadlock
        os.environ.setdefault("DISABLE_MULTIPROC", "1")
        initialize_distributed()  # before anything asks JAX about devices
        index, count = process_info()
        if index != 0:
            raise RuntimeError("JaxevalLM runs on process 0; the other processes run jaxeval.lm_eval.follow()")
        preloaded = isinstance(pretrained, Model)
        load = None if preloaded else dict(options=record_of(self._options(
            dict(model=str(pretrained), dtype=dtype, attention=attention, prefill_chunk=int(prefill_chunk), mesh=mesh,
                 **model_flags), overrides)), tokenizer=tokenizer)
        if count > 1:
            if load is not None and mesh is not None and not isinstance(mesh, str):
                raise ValueError("multi-process runs take mesh as a spec string (e.g. 'tensor=4,context=2')")
            open_followers()
            broadcast({"op": "init", "preloaded": preloaded, "load": load, "host_split": host_split})
        self.model = pretrained if preloaded else load_for_lm_eval(load)
        self.tokenizer = self.model.tokenizer
        if self.tokenizer is None:
            raise ValueError(f"{self.model.path}: no tokenizer files; lm-eval needs one (tokenizer=FOLDER)")
        limit = self.model.config.context_limit
        self._max_length = int(max_length) if max_length is not None else limit
        if not 1 <= self._max_length <= limit:
            raise ModelArgsError(f"jaxeval model_args: max_length={max_length} is outside [1, {limit}] "
                             f"(the model's context, {self.model.config.context_source})")
        self.batch_size_per_gpu = _batch_size(batch_size)
        self.add_bos_token = add_bos_token
        self.custom_prefix_token_id = None if prefix_token_id is None else int(prefix_token_id)
        self.seed = int(seed)
        self.chat_template_args = dict(chat_template_args or {})
        if enable_thinking is not None:
            self.chat_template_args["enable_thinking"] = enable_thinking
        self.engine = EngineCalls(self.model, host_split)

    @staticmethod
    def _options(values: dict, overrides: dict) -> ModelOptions:
        """The ModelOptions of model_args' model flags (text, as lm-eval passes them, read as the flags read it)."""
        try:
            return ModelOptions.from_text(values, "jaxeval model_args").replace(config_overrides=overrides)
        except ConfigError as e:
            raise ModelArgsError(str(e)) from None

    # lm-eval's model properties ----------------------------------------------------------
    @property
    def eot_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def prefix_token_id(self) -> int:
        if self.custom_prefix_token_id is not None:
            return self.custom_prefix_token_id
        if self.tokenizer.bos_token_id is not None:
            return self.tokenizer.bos_token_id
        return self.tokenizer.eos_token_id

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def max_gen_toks(self) -> int:
        return DEFAULT_MAX_GEN_TOKS

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer.name_or_path.replace("/", "__")

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, left_truncate_len: int | None = None,
                   **kwargs) -> list[int]:
        """HFLM.tok_encode: the tokenizer's own special tokens unless told, none when the text
        already starts with the prefix token's text."""
        special = {} if add_special_tokens is None and self.add_bos_token is None else {
            "add_special_tokens": add_special_tokens if add_special_tokens is not None else self.add_bos_token}
        if add_special_tokens is None and has_bos_prefix(string, self.tokenizer.decode(self.prefix_token_id)):
            special["add_special_tokens"] = False
        encoding = self.tokenizer.encode(string, **special)
        return encoding[-left_truncate_len:] if left_truncate_len else encoding

    def tok_decode(self, tokens, skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """HFLM.apply_chat_template: the tokenizer's template; on a template error, again without system turns."""
        import jinja2

        def render(history):
            return self.tokenizer.apply_chat_template(history, tokenize=False,
                                                      add_generation_prompt=add_generation_prompt,
                                                      continue_final_message=not add_generation_prompt,
                                                      **self.chat_template_args)

        try:
            return render(chat_history)
        except jinja2.exceptions.TemplateError:
            return render([m for m in chat_history if m["role"] != "system"])

    def get_model_info(self) -> dict:
        import jax

        from jaxeval.models.mesh import describe

        params = sum(int(np.prod(p.shape)) for p in jax.tree.leaves(self.model.module.params()))
        return {"model_num_parameters": params, "model_dtype": self.model.dtype,
                "jaxeval_fingerprint": self.model.fingerprint, "jaxeval_attention": self.model.attention,
                "jaxeval_prefill_chunk": self.model.prefill_chunk, "jaxeval_mesh": describe(self.model.mesh),
                "jaxeval_config_overrides": self.model.config_overrides, "jaxeval_max_length": self.max_length,
                "jaxeval_read_tokens": dict(self.engine.read_tokens)}  # process 0's, input tokens through the trunk

    # requests --------------------------------------------------------------------------------
    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, **kwargs) -> list[tuple[float, bool]]:
        """(request strings or None, context ids, continuation ids) -> (log p(continuation), is_greedy)."""
        plan = plan_reads([score_window(context, continuation, self.max_length)
                           for _, context, continuation in requests])
        results = []
        with tqdm(total=len(plan.reads), disable=disable_tqdm, desc="jaxeval reads") as bar:
            for start in range(0, len(plan.reads), READS_PER_CALL):
                batch = plan.reads[start:start + READS_PER_CALL]
                results += self.engine.read_many(batch).results
                bar.update(len(batch))
        answers = plan.answers(results)
        for (request, _, _), answer in zip(requests, answers):
            if request is not None:  # rolling windows are cached per document by loglikelihood_rolling
                self.cache_hook.add_partial("loglikelihood", request, answer)
        return answers

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        """Each text over lm-eval's disjoint rolling windows of max_length tokens (each token scored once,
        the first after the prefix token), summed."""
        windows, owners = [], []
        for index, (string,) in enumerate(req.args for req in requests):
            for context, continuation in map(make_disjoint_window, get_rolling_token_windows(
                    token_list=self.tok_encode(string), prefix_token=self.prefix_token_id,
                    max_seq_len=self.max_length, context_len=1)):
                windows.append((None, context, continuation))
                owners.append(index)
        totals = [0.0] * len(requests)
        for owner, (logprob, _) in zip(owners, self._loglikelihood_tokens(windows, disable_tqdm=disable_tqdm)):
            totals[owner] += logprob
        for req, total in zip(requests, totals):
            self.cache_hook.add_partial("loglikelihood_rolling", (req.args[0],), total)
        return totals

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """Greedy (or sampled, as gen_kwargs ask) generations, stopped at EOS, `until` or max_gen_toks."""
        groups: dict[str, list[int]] = {}
        for index, req in enumerate(requests):
            groups.setdefault(json.dumps(req.args[1], sort_keys=True, default=str), []).append(index)
        texts = [None] * len(requests)
        eos = self.tok_decode([self.eot_token_id], skip_special_tokens=False)
        with tqdm(total=len(requests), disable=disable_tqdm, desc="jaxeval generate") as bar:
            for members in groups.values():
                gen_kwargs = requests[members[0]].args[1]
                settings = gen_settings(gen_kwargs, self.max_gen_toks)
                until = handle_stop_sequences(list(settings.until), eos=eos)
                max_context = self.max_length - settings.max_gen_toks
                if max_context < 1:
                    raise ValueError(f"generate_until: max_gen_toks={settings.max_gen_toks} leaves no room for "
                                     f"the prompt within max_length={self.max_length}")
                prompts = [self._prompt_ids(requests[i].args[0], max_context) for i in members]
                generations = self.engine.generate(prompts, max_new_tokens=settings.max_gen_toks,
                                                   stop=[u for u in until if u], temperature=settings.temperature,
                                                   top_p=settings.top_p, seed=self.seed, batch_size=self.batch_size)
                for i, generation in zip(members, generations):
                    texts[i] = generation_text(generation.tokens, until, self.tokenizer)
                    self.cache_hook.add_partial("generate_until", (requests[i].args[0], gen_kwargs), texts[i])
                bar.update(len(members))
        return texts

    def _prompt_ids(self, context: str, max_context: int) -> list[int]:
        """HFLM.tok_batch_encode for one prompt: no special tokens when it starts with the BOS text,
        else add_bos_token when set, else the tokenizer's default; the last max_context tokens."""
        if has_bos_prefix(context, getattr(self.tokenizer, "bos_token", None)):
            ids = self.tokenizer.encode(context, add_special_tokens=False)
        elif self.add_bos_token is not None:
            ids = self.tokenizer.encode(context, add_special_tokens=self.add_bos_token)
        else:
            ids = self.tokenizer.encode(context)
        return ids[-max_context:] or [self.prefix_token_id]


if "jaxeval" not in model_registry:  # a later lm-eval may already hold it from this package's entry point
    register_model("jaxeval")(JaxevalLM)
