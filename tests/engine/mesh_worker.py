"""Subprocess side of the mesh tests: reads and generates with tiny models on a given mesh, prints JSON.

Run by tests/engine/test_mesh_devices.py and test_multihost.py with XLA_FLAGS set before JAX is
imported (8 or 2 x 4 simulated CPU devices); JAX is imported inside main() so the tests can
import write_tiny_llama() without starting JAX.

    python mesh_worker.py MODEL_FOLDER OUT.json none data=2,tensor=2,context=2 tensor=8 ...
    python mesh_worker.py FOLDER_OF_MODELS OUT.json families none tensor=8 ...   (every model in the folder)
    (multi-process: JAXEVAL_COORDINATOR / JAXEVAL_NUM_PROCESSES / JAXEVAL_PROCESS_ID set; only
    process 0 writes OUT.json, every process prints its results on stdout)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

# 8 query heads, 2 KV heads: tensor=2 splits the KV heads, tensor=8 replicates them
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128, "hidden_size": 64,
         "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
         "head_dim": 8, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "hidden_act": "silu",
         "tie_word_embeddings": False, "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2}
# sliding windows (every other layer), attention and final soft-capping, GQA
GEMMA2 = dict(model_type="gemma2", vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=8, num_key_value_heads=2, head_dim=8, max_position_embeddings=8192,
              rope_theta=10000.0, sliding_window=200, query_pre_attn_scalar=16, attn_logit_softcapping=20.0,
              final_logit_softcapping=15.0)
CHUNK = 256  # prefill chunk: texts below span several chunks, so the cache path is exercised


def write_tiny_llama(folder: Path) -> Path:
    """A random Llama in Hugging Face safetensors layout (numpy only)."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    c = LLAMA
    v, d, f, h, kv, hd = (c["vocab_size"], c["hidden_size"], c["intermediate_size"], c["num_attention_heads"],
                          c["num_key_value_heads"], c["head_dim"])

    def w(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    tensors = {"model.embed_tokens.weight": w(v, d, scale=8.0), "model.norm.weight": 1 + 0.3 * w(d),
               "lm_head.weight": w(v, d, scale=4.0)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        tensors |= {p + "self_attn.q_proj.weight": w(h * hd, d, scale=2.0),
                    p + "self_attn.k_proj.weight": w(kv * hd, d), p + "self_attn.v_proj.weight": w(kv * hd, d),
                    p + "self_attn.o_proj.weight": w(d, h * hd),
                    p + "mlp.gate_proj.weight": w(f, d), p + "mlp.up_proj.weight": w(f, d),
                    p + "mlp.down_proj.weight": w(d, f), p + "input_layernorm.weight": 1 + 0.3 * w(d),
                    p + "post_attention_layernorm.weight": 1 + 0.3 * w(d)}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(c, indent=2))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def requests():
    """One long read (3 chunks) and a batch of mixed-length prompts."""
    rs = np.random.RandomState(0)
    ids = rs.randint(0, 97, size=700)
    positions = np.array([1, 2, 255, 256, 257, 500, 511, 512, 699])
    prompts = [rs.randint(3, 97, size=n).tolist() for n in (5, 300, 40)]
    return ids, positions, prompts


ATTEND_SHAPES: set = set()  # (q shape, key shape) each attention call was traced with


def record_attention_shapes():
    """Wrap the decoder's backends so every traced call records the (per-shard) shapes it saw."""
    import jaxeval.models.decoder as decoder

    original = decoder.get_attention

    def get_attention(*args, **kwargs):
        attend = original(*args, **kwargs)

        def recorded(q, k, *rest):
            ATTEND_SHAPES.add((tuple(q.shape), tuple(k.shape)))
            return attend(q, k, *rest)

        return recorded

    decoder.get_attention = get_attention


def run_mesh(folder: str, spec: str) -> dict:
    import jax
    from flax import nnx

    from jaxeval.api import load_model
    from jaxeval.weights.loader import convert
    from jaxeval.models.mesh import make_mesh
    from jaxeval.engine.read import read
    from jaxeval.engine.runtime import Runtime
    from jaxeval.models.config import config_from_hf
    from jaxeval.models.decoder import Decoder
    from jaxeval.models.sharding import check_mesh_fits, shard_params

    mesh = None if spec == "none" else spec
    ids, positions, prompts = requests()
    model = load_model(folder, dtype="float32", mesh=mesh, prefill_chunk=CHUNK, load_tokenizer=False)
    shardings = {k: str(v.sharding.spec) for k, v in model.module.params()["layers"].items()
                 if hasattr(v.sharding, "spec")}
    got = model.read(ids, positions, ids[positions])
    out = {"llama_logprobs": got.logprobs.tolist(), "llama_top1": got.top1.tolist(),
           "llama_tokens": [g.tokens for g in model.generate(prompts, 8)], "shardings": shardings,
           "devices": jax.device_count(), "processes": jax.process_count()}
    if mesh is not None:  # the same weights as an Orbax checkpoint, restored straight into the mesh
        orbax = Path(folder).parent / "llama_orbax"
        if not orbax.exists() and jax.process_count() == 1:
            convert(folder, orbax, dtype="float32")
        if orbax.exists():
            restored = load_model(orbax, dtype="float32", mesh=mesh, prefill_chunk=CHUNK, load_tokenizer=False)
            out["orbax_logprobs"] = restored.read(ids, positions, ids[positions]).logprobs.tolist()
    config = config_from_hf(GEMMA2)
    mesh = None if mesh is None else make_mesh(mesh)
    if mesh is not None:
        check_mesh_fits(config, mesh, CHUNK)
    params = shard_params(Decoder(config, rngs=nnx.Rngs(1)).params(), mesh)
    backends = ("chunked", "xla") if spec in ("none", "context=8") else ("chunked",)  # xla: the CP-heavy mesh
    for backend in backends if jax.process_count() == 1 else ():
        got = read(params, config, Runtime(attention=backend, prefill_chunk=CHUNK, dtype="float32", mesh=mesh), ids,
                   positions, ids[positions])
        out[f"gemma2_{backend}_logprobs"] = got.logprobs.tolist()
    out["attend_shapes"] = sorted(ATTEND_SHAPES)
    ATTEND_SHAPES.clear()
    return out


def read_families(root: str, spec: str) -> dict:
    """Each model folder under root (one per family) read on the mesh: next-token log-probs of one long text."""
    from jaxeval.api import load_model

    ids = np.random.RandomState(1).randint(3, 256, size=700)
    positions = np.arange(1, ids.size)
    out = {}
    for folder in sorted(Path(root).iterdir()):
        model = load_model(folder, dtype="float32", mesh=None if spec == "none" else spec, prefill_chunk=CHUNK,
                           load_tokenizer=False)
        out[folder.name] = {"logprobs": model.read(ids, positions, ids[positions]).logprobs.tolist(),
                            "shardings": {k: str(v.sharding.spec) for k, v in model.module.params()["layers"].items()
                                          if hasattr(v.sharding, "spec")}}
    return out


def bad_inputs(folder: str) -> dict:
    """Each user error on 8 devices -> its message; asserts that nothing was compiled first."""
    from jaxeval.api import load_model
    from jaxeval.engine import kv_cache, read
    from jaxeval.errors import JaxevalError

    six_heads = Path(folder).parent / "six_heads"  # config only: the mesh is refused before weights are read
    six_heads.mkdir(exist_ok=True)
    (six_heads / "config.json").write_text(json.dumps(LLAMA | {"num_attention_heads": 6}))
    jitted = (read.prefill_chunk, read.read_head, kv_cache.prefill_rows, kv_cache.decode_step)
    before = [f._cache_size() for f in jitted]
    errors = {}

    def catch(name, fn):
        try:
            fn()
        except JaxevalError as e:
            errors[name] = f"{type(e).__name__}: {e}"

    catch("devices", lambda: load_model(folder, dtype="float32", mesh="data=3", load_tokenizer=False))
    catch("heads", lambda: load_model(six_heads, dtype="float32", mesh="tensor=4,context=2", load_tokenizer=False))
    catch("chunk", lambda: load_model(folder, dtype="float32", mesh="context=8", prefill_chunk=8,
                                      load_tokenizer=False))
    model = load_model(folder, dtype="float32", mesh="tensor=2,context=4", load_tokenizer=False)
    too_long = np.ones(LLAMA["max_position_embeddings"] + 2, np.int64)
    catch("read_too_long", lambda: model.read(too_long, [too_long.size - 1], [1]))
    catch("prompt_too_long", lambda: model.generate([too_long[:-10].tolist()], 16))
    errors["compiled"] = [f._cache_size() - b for f, b in zip(jitted, before)]
    return errors


def main(argv):
    folder, out_file, *specs = argv
    from jaxeval.engine.distributed import initialize_distributed, is_writer

    initialize_distributed()
    record_attention_shapes()
    if specs[0] == "families":
        results = {spec: read_families(folder, spec) for spec in specs[1:]}
    else:
        results = {spec: bad_inputs(folder) if spec == "errors" else run_mesh(folder, spec) for spec in specs}
    if is_writer():  # "{process}" in the name lets a test see which processes wrote
        import jax

        Path(out_file.replace("{process}", str(jax.process_index()))).write_text(json.dumps(results))
    print("RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
