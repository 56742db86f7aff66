"""Write the EasyDeL checkpoints the `easydel` test tier reads (tests/weights/test_easydel.py).

Run with EasyDeL's own virtualenv (it cannot share jaxeval's: it pins jax 0.9.2 and transformers 5.5):

    python3.11 -m venv /work/venvs/easydel
    /work/venvs/easydel/bin/pip install easydel==0.3.0 pillow torch==2.13.0
    /work/venvs/easydel/bin/python scripts/easydel_fixtures.py /work/easydel_fixtures

For each tiny model (a dense Llama, untied; a Qwen3 with q/k norms, tied embeddings) it writes
OUT/<name>/ with EasyDeL's save_pretrained (config.json + tensorstore arrays) and OUT/<name>/reference.npz:
token ids, read positions and EasyDeL's own float32 log-probs of the next token there; and OUT/<name>_hf/,
the checkpoint reloaded by EasyDeL and exported by its own to_torch() as a Hugging Face folder (the 16k
parity reference: shared/specs/easydel_reference.md). `--export` writes only the exports, for existing
checkpoints. The reference
forward runs attention in float32 (EasyDeL's attn_dtype defaults to bfloat16) and keeps the rotary table in
float32: EasyDeL as shipped rounds it to bfloat16 whatever the model dtype (easydel/infra/base_config.py,
get_basic_frequencies), which the contract in shared/specs/easydel_reference.md sets aside: a checkpoint is
read as the model defines it.
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import easydel as ed  # noqa: E402
from flax import nnx  # noqa: E402

SEQ = 1024
COMMON = dict(vocab_size=4096, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, max_position_embeddings=4096, rms_norm_eps=1e-5)
MODELS = {
    "llama": (lambda: ed.LlamaConfig(**COMMON, rope_theta=10000.0, tie_word_embeddings=False),
              lambda c, r: ed.LlamaForCausalLM(config=c, dtype=jnp.float32, param_dtype=jnp.float32,
                                               precision=jax.lax.Precision.HIGHEST, rngs=r)),
    "qwen3": (lambda: ed.Qwen3Config(**COMMON, rope_theta=1000000.0, tie_word_embeddings=True),
              lambda c, r: ed.Qwen3ForCausalLM(config=c, dtype=jnp.float32, param_dtype=jnp.float32,
                                               precision=jax.lax.Precision.HIGHEST, rngs=r)),
}


def float32_rope():
    """EasyDeL's rotary table without its bfloat16 rounding (the only change to its forward)."""
    from easydel.infra import base_config
    from easydel.infra.utils import ModuleCaches
    from easydel.layers import get_frequencies
    from jax.sharding import NamedSharding, PartitionSpec

    def frequencies(self, head_size=None, rotary_dim=None, base=None):
        head_size = head_size or self.head_dim
        table = get_frequencies(head_size=head_size, rotary_dim=rotary_dim or head_size,
                                max_position=self.granted_freq_max_position_embedding, base=base or self.rope_theta,
                                rope_scaling=self._get_rope_config().to_dict(),
                                partial_rotary_factor=getattr(self, "partial_rotary_factor", 1.0))
        return ModuleCaches(jax.device_put(table, NamedSharding(self.mesh, PartitionSpec())))

    base_config.EasyDeLBaseConfig.get_basic_frequencies = frequencies


def export_hf(folder: str) -> None:
    """EasyDeL's own export of the checkpoint it saved: reloaded, to_torch(), tied where the model is, saved."""
    model = ed.AutoEasyDeLModelForCausalLM.from_pretrained(folder, dtype=jnp.float32, param_dtype=jnp.float32)
    with model.mesh:
        torch_model = model.to_torch()
    if torch_model.config.tie_word_embeddings:
        torch_model.tie_weights()
    torch_model.save_pretrained(f"{folder}_hf", safe_serialization=True)
    print(f"wrote {folder}_hf")


def main(out: str) -> None:
    float32_rope()
    rng = np.random.default_rng(0)
    for name, (make_config, make_model) in MODELS.items():
        config = make_config()
        # attention in float32 too: EasyDeL's default attn_dtype is bfloat16 (easydel/infra/base_config.py)
        config.add_basic_configurations(attn_dtype=jnp.float32, attn_softmax_dtype=jnp.float32)
        model = make_model(config, nnx.Rngs(0))
        folder = os.path.join(out, name)
        ids = rng.integers(16, config.vocab_size, SEQ).astype(np.int32)
        positions = np.arange(1, SEQ, 3, dtype=np.int32)
        with model.mesh:
            model.save_pretrained(folder)
            logits = np.asarray(model(input_ids=jnp.asarray(ids)[None]).logits[0], np.float64)
        logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
            - logits.max(-1, keepdims=True)
        np.savez(os.path.join(folder, "reference.npz"), ids=ids, positions=positions,
                 logprobs=logp[positions - 1, ids[positions]], easydel=ed.__version__)
        print(f"wrote {folder}")
        export_hf(folder)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--export"]
    target = args[0] if args else "/work/easydel_fixtures"
    if "--export" in sys.argv:
        for name in MODELS:
            export_hf(os.path.join(target, name))
    else:
        main(target)
