"""Declarative mappings: the worked Flax NNX example of docs/training.md read without code, and one-line
errors for a leaf that is missing, unmapped or mis-shaped."""

import importlib.util
import json
import shutil
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxeval
from jaxeval.cli import EMBEDDED_MODEL, main
from jaxeval.errors import CheckpointError, ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
MAPPING = EXAMPLES / "nnx_decoder_mapping.yaml"
SHAPE = dict(vocab=4096, d=64, layers=2, heads=4, kv_heads=2, head_dim=16, mlp=96, rope_theta=10000.0, eps=1e-5)


def _example():
    spec = importlib.util.spec_from_file_location("nnx_decoder", EXAMPLES / "nnx_decoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def user_model(tmp_path_factory):
    """The user's decoder with random weights, saved as the docs say: MODEL/config.json + MODEL/params."""
    example = _example()
    model = example.UserDecoder(**SHAPE, rngs=nnx.Rngs(0))
    folder = tmp_path_factory.mktemp("user") / "model"
    example.save(model, folder / "params")
    (folder / "config.json").write_text(json.dumps(example.hf_config(**SHAPE)))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(EMBEDDED_MODEL / name, folder / name)
    return model, folder


def _user_logprobs(model, ids, positions):
    logits = model(jnp.asarray(ids)[None])[0]
    logp = np.asarray(jnp.asarray(logits, jnp.float32) - jnp.asarray(
        np.log(np.exp(np.asarray(logits, np.float64)).sum(-1, keepdims=True)), jnp.float32))
    return logp[positions - 1, ids[positions]]


def test_user_nnx_decoder_reads_as_its_own_forward(user_model):
    model, folder = user_model
    ids = np.random.default_rng(0).integers(0, SHAPE["vocab"], 300)
    positions = np.arange(1, 300, 7)
    expected = _user_logprobs(model, ids, positions)
    loaded = jaxeval.load_model(folder, "float32", mapping=MAPPING, load_tokenizer=False)
    got = loaded.read(ids, positions, ids[positions]).logprobs
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # the same tree, live from the user's training loop, through the same mapping
    live = jaxeval.evaluate(params=model, mapping=MAPPING, config=folder, tokenizer=folder, limit=1,
                            flags={"agent_bench_sets": "facts"})
    assert live["live"]["resharded"] == 0 and live["results"]["agent_bench/facts/8k"]["mean_logprob"] < 0


@pytest.mark.long
def test_user_nnx_decoder_reads_as_its_own_forward_at_16k(tmp_path):
    """16,384 positions against the user's own forward. One query and one KV head keep its naive attention's
    [heads, 16k, 16k] scores at 1 GiB on CPU; the mapping is the same file."""
    example = _example()
    shape = {**SHAPE, "heads": 1, "kv_heads": 1}
    model = example.UserDecoder(**shape, rngs=nnx.Rngs(1))
    folder = tmp_path / "model"
    example.save(model, folder / "params")
    (folder / "config.json").write_text(json.dumps(example.hf_config(**shape)))
    seq = 16384
    ids = np.random.default_rng(1).integers(0, SHAPE["vocab"], seq)
    positions = np.arange(1, seq)
    expected = _user_logprobs(model, ids, positions)
    got = jaxeval.load_model(folder, "float32", mapping=MAPPING, load_tokenizer=False).read(
        ids, positions, ids[positions]).logprobs
    delta = np.abs(np.asarray(got, np.float64) - expected).max()
    print(f"user NNX decoder: max |d log p| over {seq - 1} positions = {delta:.2e}")
    assert delta <= 2e-5


def test_mapping_on_the_command_line(user_model, tmp_path):
    _, folder = user_model
    out = tmp_path / "run.json"
    assert main(["run", "--model", str(folder), "--model_args", f"mapping={MAPPING}", "--tasks", "agent_bench",
                 "--limit", "1", "--agent_bench_sets", "facts", "--out", str(out)]) == 0
    assert "agent_bench/facts/8k" in json.loads(out.read_text())["results"]


def _mapping(tmp_path, edit):
    import yaml

    mapping = yaml.safe_load(MAPPING.read_text())
    edit(mapping)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(mapping))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["params"].pop("layers/w_down"),
     r"parameter layers/w_down \(expected shape \[2, 96, 64\]\) is unmapped"),
    (lambda m: m["params"].update({"layers/w_down": "blocks/{layer}/down/kernelz"}),
     r"blocks/0/down/kernelz \(read for layers/w_down, expected shape \[2, 96, 64\]\) is missing"),
    (lambda m: m["params"].update({"layers/w_down": "blocks/{layer}/gate_up/kernel"})
     or m.update({"ignore": ["blocks/*/down/kernel"]}),
     r"blocks/0/gate_up/kernel \(for layers/w_down\): has shape \[64, 192\], expected \[96, 64\]"),
    (lambda m: m["params"].update({"embed": "head/kernel"}),
     r"tok/embedding \(shape \[4096, 64\]\) is unmapped"),
    (lambda m: m["params"]["layers/wq"]["split"].update({"sizes": ["heads*head_dim", 8]}),
     r"axis 1 is 128 long, the split sizes \[64, 8\] add to 72 \(expected shape \[64, 4, 16\]\)"),
])
def test_a_bad_leaf_is_one_error_naming_it(user_model, tmp_path, edit, message):
    _, folder = user_model
    with pytest.raises(CheckpointError, match=message):
        jaxeval.load_model(folder, "float32", mapping=_mapping(tmp_path, edit), load_tokenizer=False)


def test_bad_mapping_files_are_one_line(user_model, tmp_path, capsys):
    _, folder = user_model
    (tmp_path / "bad.yaml").write_text("params: [1, 2\n")
    for mapping, needle in ((tmp_path / "nope.yaml", "neither a file nor a built-in mapping"),
                            (tmp_path / "bad.yaml", "not valid YAML")):
        assert main(["run", "--model", str(folder), "--mapping", str(mapping), "--tasks", "agent_bench",
                     "--limit", "1", "--out", str(tmp_path / "r.json")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
    with pytest.raises(ConfigError, match="unknown key 'tranpose'"):
        jaxeval.load_model(folder, mapping={"params": {"embed": {"from": "tok/embedding", "tranpose": [1, 0]}}})
