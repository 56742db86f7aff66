"""A decoder a user wrote in Flax NNX, trained by their own loop, saved with Orbax: the worked example of
docs/training.md. jaxeval reads its checkpoint through nnx_decoder_mapping.yaml, no code of its own.

Its layout differs from jaxeval's on purpose, the way other trainers' do: one fused q/k/v kernel
[D, (H + 2 KV) * hd], one fused gate/up kernel [D, 2F], an output projection stored [D, H, hd], blocks kept
in a list (one subtree per layer), and nnx's RMSNorm "scale" names.
"""

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp
from flax import nnx


class Block(nnx.Module):
    def __init__(self, d: int, heads: int, kv_heads: int, head_dim: int, mlp: int, eps: float, rngs: nnx.Rngs):
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.attn_norm = nnx.RMSNorm(d, epsilon=eps, rngs=rngs)
        self.qkv = nnx.Linear(d, (heads + 2 * kv_heads) * head_dim, use_bias=False, rngs=rngs)
        self.out = nnx.Param(nnx.initializers.normal(0.02)(rngs.params(), (d, heads, head_dim)))  # [D, H, hd]
        self.mlp_norm = nnx.RMSNorm(d, epsilon=eps, rngs=rngs)
        self.gate_up = nnx.Linear(d, 2 * mlp, use_bias=False, rngs=rngs)
        self.down = nnx.Linear(mlp, d, use_bias=False, rngs=rngs)

    def __call__(self, x, cos, sin):
        b, t, _ = x.shape
        h, kv, hd = self.heads, self.kv_heads, self.head_dim
        q, k, v = jnp.split(self.qkv(self.attn_norm(x)), [h * hd, (h + kv) * hd], axis=-1)
        q, k, v = q.reshape(b, t, h, hd), k.reshape(b, t, kv, hd), v.reshape(b, t, kv, hd)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k, v = jnp.repeat(k, h // kv, axis=2), jnp.repeat(v, h // kv, axis=2)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd).astype(q.dtype)
        scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -jnp.inf)
        attn = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
        x = x + jnp.einsum("bthk,dhk->btd", attn, self.out[...])
        gate, up = jnp.split(self.gate_up(self.mlp_norm(x)), 2, axis=-1)
        return x + self.down(jax.nn.silu(gate) * up)


def rotate(x, cos, sin):
    """Rotary embedding, the halves convention (Hugging Face Llama's)."""
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos[None, :, None, :] + rotated * sin[None, :, None, :]


class UserDecoder(nnx.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, kv_heads: int, head_dim: int, mlp: int,
                 rope_theta: float, eps: float, rngs: nnx.Rngs):
        self.head_dim, self.rope_theta = head_dim, rope_theta
        self.tok = nnx.Embed(vocab, d, rngs=rngs)
        self.blocks = nnx.List([Block(d, heads, kv_heads, head_dim, mlp, eps, rngs) for _ in range(layers)])
        self.norm = nnx.RMSNorm(d, epsilon=eps, rngs=rngs)
        self.head = nnx.Linear(d, vocab, use_bias=False, rngs=rngs)

    def __call__(self, ids):
        t = ids.shape[1]
        inv_freq = 1.0 / (self.rope_theta ** (jnp.arange(0, self.head_dim, 2, dtype=jnp.float32) / self.head_dim))
        angles = jnp.arange(t, dtype=jnp.float32)[:, None] * inv_freq[None, :]
        angles = jnp.concatenate([angles, angles], axis=-1)
        cos, sin = jnp.cos(angles), jnp.sin(angles)
        x = self.tok(ids)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))  # logits [B, T, V]


def hf_config(vocab, d, layers, heads, kv_heads, head_dim, mlp, rope_theta, eps) -> dict:
    """The config.json that tells jaxeval the model's shape (a Llama in Hugging Face's terms)."""
    return dict(model_type="llama", vocab_size=vocab, hidden_size=d, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=mlp,
                rope_theta=rope_theta, rms_norm_eps=eps, max_position_embeddings=32768, tie_word_embeddings=False,
                hidden_act="silu")


def save(model: UserDecoder, folder) -> None:
    """What the user's training script does at a checkpoint: the parameters as an Orbax PyTree."""
    params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    params["blocks"] = {str(i): block for i, block in params["blocks"].items()}  # Orbax keys are strings
    with ocp.PyTreeCheckpointer() as checkpointer:
        checkpointer.save(folder, params, force=True)
