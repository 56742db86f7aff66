"""ModelOptions: how a model is loaded and run, declared once for every command that loads one
(run, validate, plan, curve, serve, bench, the agent-bench command, the lm-eval adapter) and for
`jaxeval.load_model`, whose defaults are these.

Each field is a flag (`--dtype`), a run config YAML key and an entry of the recorded config;
hashed=False marks those the model fingerprint already holds (jaxeval.fingerprint: the
quantization and KV-cache parts, the mapping) or that name the model rather than a setting, so
they stay out of the run's config hash (docs/results_schema.md).
"""

from __future__ import annotations

import argparse
import dataclasses

from jaxeval.options.settings import parse_value, setting, values_of

# Written out here so that parsing flags imports no JAX; tests/options check them against the
# attention registry, the quantizer and the KV-cache policies.
ATTENTION = ("chunked", "xla", "splash", "cudnn")
DTYPES = ("auto", "float32", "bfloat16")
QUANTIZE = ("none", "int8", "int4", "fp8")
KV_CACHE = ("exact", "int8", "fp8", "streaming", "snapkv")
KV_FLAGS = ("kv_cache", "kv_sinks", "kv_window", "kv_budget", "kv_observe", "kv_kernel", "kv_pool")


def yes_no(text) -> bool:
    """A true/false flag given as text (--dequantize true)."""
    value = str(text).strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value in ("true", "1", "yes")


@dataclasses.dataclass(frozen=True)
class ModelOptions:
    model: str | None = setting(None, "HF safetensors folder, jaxeval Orbax checkpoint folder or hub id", hashed=False)
    dtype: str = setting("auto", "auto: float32 on CPU, bfloat16 on accelerators", choices=DTYPES)
    attention: str = setting("chunked", "chunked: any platform; splash: TPU; cudnn: GPU (bfloat16); xla: reference",
                             choices=ATTENTION)
    prefill_chunk: int = setting(2048, "tokens per prefill step")
    quantize: str = setting("none", "round every matmul weight at load and keep it so on the device (what-if "
                            "studies): int8 per channel, int4 per group of --quant_group rows, fp8 e4m3 per channel",
                            choices=QUANTIZE, hashed=False)
    quant_group: int = setting(128, "input rows per int4 scale", hashed=False)
    dequantize: bool = setting(False, "a GGUF checkpoint: dequantize every tensor at load (float, as transformers "
                               "does) instead of keeping the matmul weights in their block codes on the device",
                               parse=yes_no, metavar="{true,false}", hashed=False)
    kv_cache: str = setting("exact", "KV-cache policy of reads and generation (recorded; part of the run name): int8 / "
                            "fp8 codes with a float32 scale per token and head; streaming: attention sinks plus a "
                            "recent window (StreamingLLM, RoPE at the original positions); snapkv: a prompt "
                            "compressed to --kv_budget positions per layer and KV head before generating "
                            "(generation only)", metavar="{" + ",".join(KV_CACHE) + "}", hashed=False)
    kv_sinks: int | None = setting(None, "streaming: first positions every query sees (4)", hashed=False)
    kv_window: int | None = setting(None, "streaming: last positions every query sees, itself included (4096)",
                                    hashed=False)
    kv_budget: int | None = setting(None, "snapkv: prompt positions kept per layer and KV head, the observation "
                                    "window included (1024)", hashed=False)
    kv_observe: int | None = setting(None, "snapkv: the prompt's last tokens whose attention votes, all kept (32)",
                                     hashed=False)
    kv_kernel: int | None = setting(None, "snapkv: pooling width of the votes, odd (7)", hashed=False)
    kv_pool: str | None = setting(None, "snapkv: vote pooling (max)", choices=("max", "avg"), hashed=False)
    maxtext_config: str | None = setting(None, "a MaxText checkpoint's model config: MaxText's overrides as its "
                                         "command line takes them ('model_name=llama3.1-8b scan_layers=True ...'), "
                                         "optionally led by a run's YAML (docs/maxtext.md)")
    model_config: str | None = setting(None, "a MaxText checkpoint's model config as a Hugging Face config.json "
                                       "(model_args key: config)")
    tokenizer: str | None = setting(None, "tokenizer folder or hub id (a MaxText checkpoint holds none)")
    mapping: str | None = setting(None, "another JAX trainer's checkpoint: a mapping (YAML / JSON file, or a built-in: "
                                  "easydel) from its tree onto jaxeval's parameters (docs/training.md)",
                                  metavar="FILE|NAME", hashed=False)
    mesh: str | None = setting(None, "device mesh, e.g. data=2,tensor=2,context=2 (axes data, fsdp, tensor, context; "
                               "unnamed = 1), or auto; default: one device. Multi-host: set JAXEVAL_COORDINATOR, "
                               "JAXEVAL_NUM_PROCESSES, JAXEVAL_PROCESS_ID (or JAXEVAL_DISTRIBUTED=1 on Cloud TPU); "
                               "process 0 writes the results")
    # --model_args' config.json fields (jaxeval.models.config.CONFIG_OVERRIDES): no flag of their own;
    # recorded and hashed into the run
    config_overrides: dict = dataclasses.field(default_factory=dict, metadata={"flag": False, "hashed": True,
                                                                               "help": ""})

    @classmethod
    def of(cls, values) -> "ModelOptions":
        """The options held by a parsed namespace or a mapping of flag values."""
        return values_of(cls, values)

    def load_arguments(self) -> dict:
        """jaxeval.load_model's keyword arguments besides the path (a bad KV policy: one ConfigError)."""
        from jaxeval.models.kv_policy import policy_of_flags

        return dict(dtype=self.dtype, attention=self.attention, prefill_chunk=self.prefill_chunk, mesh=self.mesh,
                    kv_cache=policy_of_flags(self),
                    quantize=self.quantize, quant_group=self.quant_group, dequantize=self.dequantize,
                    maxtext_config=self.maxtext_config, config=self.model_config, tokenizer=self.tokenizer,
                    mapping=self.mapping, **self.config_overrides)

    @classmethod
    def from_text(cls, values: dict, where: str) -> "ModelOptions":
        """The options of {field: value} whose values may be text as a flag takes it (lm-eval's model_args):
        each read as its flag reads it; one ConfigError naming where, the key and the value otherwise."""
        return cls(**{name: parse_value(cls, name, value, where) for name, value in values.items()})

    def replace(self, **changes) -> "ModelOptions":
        return dataclasses.replace(self, **changes)


def add_model_arguments(parser: argparse.ArgumentParser, default_model: str | None) -> None:
    """Every ModelOptions flag; --model required where the command has no default model."""
    from jaxeval.options.settings import add_flags

    add_flags(parser, ModelOptions, defaults={"model": default_model})
    if default_model is None:
        next(a for a in parser._actions if a.dest == "model").required = True
