"""jaxeval inside lm-evaluation-harness, checked by lm-eval itself against its own `hf` model.

A tiny random Llama (transformers, float32) is saved with a Llama-style tokenizer (the embedded
byte-level BPE adding a BOS, with a ChatML chat template). Four offline task YAMLs over local
JSONL files run through lm-eval twice on that folder: `--model hf` in this process
(lm_eval.simple_evaluate) and `--model jaxeval` through `python -m jaxeval.lm_eval`, the
command users run. max_length=32 makes lm-eval cut contexts from the left, split the perplexity
texts into several rolling windows and cut generation prompts; prefill_chunk=16 makes the
multiple-choice reads share their context prefix. Every request's log-likelihood must agree
within 1e-4, every is_greedy flag and every generation exactly, and so must the metrics.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

lm_eval = pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed "
                                                  "(pip install 'jaxeval[lm-eval]')")
torch = pytest.importorskip("torch", reason="the `hf` reference model needs PyTorch")
transformers = pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "jaxeval" / "assets" / "tiny_llama"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
TASKS = ["jx_choice", "jx_greedy", "jx_rolling", "jx_generate"]
MAX_LENGTH = 32
GEN_TOKENS = 12  # max_gen_toks of the generation task
TOL = 1e-4
WORDS = ("the river north stone light garden winter paper mountain quiet market silver window "
         "forest engine letter summer bridge candle harbor island thunder meadow violet copper "
         "lantern orchard valley shadow ember falcon marble").split()


def sentence(rng, n: int) -> str:
    return " ".join(rng.choice(WORDS, n)).capitalize() + "."


def write_model(folder: Path) -> Path:
    """A random Llama whose logits are far from ties (weights scaled up), with a BOS-adding tokenizer."""
    from tokenizers import Tokenizer, processors

    config = transformers.LlamaConfig(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      bos_token_id=0, eos_token_id=0, pad_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (1.0 if "embed" in name else 1.5 / p.shape[-1] ** 0.5))
    model.save_pretrained(folder)
    backend = Tokenizer.from_file(str(TINY / "tokenizer.json"))
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|endoftext|> $A", pair="<|endoftext|> $A $B",
                                      special_tokens=[("<|endoftext|>", 0)])])
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    tokenizer.chat_template = json.loads((TINY / "tokenizer_config.json").read_text())["chat_template"]
    tokenizer.save_pretrained(folder)
    return folder


def greedy_tokens(model_dir: Path, contexts: list[str], n_tokens: int, keep: int | None = None):
    """(tokenizer, the reference model's greedy new tokens after each context's last `keep` tokens)."""
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    out = []
    for context in contexts:
        ids = tok.encode(context)[-keep:] if keep else tok.encode(context)
        with torch.no_grad():
            out.append(model.generate(torch.tensor([ids]), max_new_tokens=n_tokens, do_sample=False)[0, len(ids):]
                       .tolist())
    return tok, out


def greedy_words(model_dir: Path, contexts: list[str], n_tokens: int) -> list[str | None]:
    """The reference model's greedy continuation of each context, as text that re-tokenises to itself."""
    tok, continuations = greedy_tokens(model_dir, contexts, n_tokens)
    out = []
    for context, new in zip(contexts, continuations):
        text = tok.decode(new, skip_special_tokens=True)
        out.append(text if tok.encode(context + text)[len(tok.encode(context)):] == new else None)
    return out


def write_tasks(folder: Path, model_dir: Path) -> Path:
    rng = np.random.default_rng(7)
    data = folder / "data"
    data.mkdir(parents=True)

    def jsonl(name, rows):
        (data / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    # multiple choice: some questions longer than max_length (cut from the left with their choice)
    jsonl("choice", [{"question": sentence(rng, n), "choices": [" " + sentence(rng, int(k)) for k in
                                                                  rng.integers(1, 6, 4)], "label": int(rng.integers(4))}
                     for n in (3, 8, 20, 45, 70, 5)])
    # loglikelihood: half the targets are the model's own greedy continuation (is_greedy True)
    contexts = [sentence(rng, n) for n in (4, 9, 15, 30, 6, 12)]
    greedy = greedy_words(model_dir, contexts, 3)
    targets = [g if i % 2 == 0 and g else " " + sentence(rng, 2) for i, g in enumerate(greedy)]
    assert sum(1 for i, g in enumerate(greedy) if i % 2 == 0 and g) >= 2, greedy
    jsonl("greedy", [{"context": c, "target": t} for c, t in zip(contexts, targets)])
    # perplexity: one window, and texts of two to four windows of max_length tokens
    jsonl("rolling", [{"text": " ".join(sentence(rng, int(n)) for _ in range(k))} for n, k in
                      ((5, 1), (12, 3), (9, 6), (20, 3))])
    # generation: `until` from the model's own vocabulary of outputs; one prompt longer than max_length
    jsonl("generate", [{"prompt": sentence(rng, n), "answer": sentence(rng, 1)} for n in (2, 5, 11, 30, 60, 7)])

    common = "dataset_path: json\ntest_split: test\nmetadata:\n  version: 1.0\n"
    tasks = {
        "jx_choice": """
            task: jx_choice
            dataset_kwargs: {data_files: {test: DATA/choice.jsonl}}
            output_type: multiple_choice
            doc_to_text: "Q: {{question}}\\nA:"
            doc_to_choice: "{{choices}}"
            doc_to_target: label
            metric_list: [{metric: acc}, {metric: acc_norm}]
            """,
        "jx_greedy": """
            task: jx_greedy
            dataset_kwargs: {data_files: {test: DATA/greedy.jsonl}}
            output_type: loglikelihood
            doc_to_text: "{{context}}"
            doc_to_target: "{{target}}"
            metric_list: [{metric: perplexity}, {metric: acc}]
            """,
        "jx_rolling": """
            task: jx_rolling
            dataset_kwargs: {data_files: {test: DATA/rolling.jsonl}}
            output_type: loglikelihood_rolling
            doc_to_text: ""
            doc_to_target: "{{text}}"
            metric_list: [{metric: word_perplexity}, {metric: byte_perplexity}, {metric: bits_per_byte}]
            """,
        "jx_generate": """
            task: jx_generate
            dataset_kwargs: {data_files: {test: DATA/generate.jsonl}}
            output_type: generate_until
            doc_to_text: "{{prompt}} ->"
            doc_to_target: "{{answer}}"
            generation_kwargs: {until: ["\\n", "er"], max_gen_toks: GEN_TOKENS, do_sample: false}
            metric_list: [{metric: exact_match}]
            """,
    }
    for name, body in tasks.items():
        body = textwrap.dedent(body).replace("DATA", str(data)).replace("GEN_TOKENS", str(GEN_TOKENS))
        (folder / f"{name}.yaml").write_text(body.lstrip() + common)
    return folder


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm_eval_adapter")
    for key, value in {**OFFLINE, "HF_DATASETS_CACHE": str(root / "datasets_cache")}.items():
        os.environ[key] = value
    model_dir = write_model(root / "model")
    return model_dir, write_tasks(root / "tasks", model_dir), root


def samples_by_doc(samples: list[dict]) -> dict[int, dict]:
    return {s["doc_id"]: s for s in samples}


def request_args(sample: dict) -> list[list]:
    """A sample's requests as lists of arguments (a logged file writes them as {"gen_args_i": {"arg_j": ...}})."""
    arguments = sample["arguments"]
    if isinstance(arguments, dict):
        return [list(a.values()) for a in arguments.values()]
    return [list(a) for a in arguments]


@pytest.fixture(scope="module")
def runs(setup):
    """(hf results, jaxeval results), each {"results": ..., "samples": {task: {doc_id: sample}}}."""
    from lm_eval.tasks import TaskManager

    model_dir, task_dir, root = setup
    out = root / "jaxeval_out"
    env = {**os.environ, **OFFLINE, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "jaxeval.lm_eval", "run", "--model", "jaxeval", "--model_args",
               f"pretrained={model_dir},dtype=float32,max_length={MAX_LENGTH},prefill_chunk=16",
               "--tasks", ",".join(TASKS), "--include_path", str(task_dir), "--batch_size", "8",
               "--output_path", str(out), "--log_samples"]
    jaxeval_run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # the hf side in this process meanwhile (its task index without lm-eval's thousands of built-in tasks)
    tasks = TaskManager(include_path=str(task_dir), include_defaults=False)
    hf = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={model_dir},dtype=float32,device=cpu,"
                                                        f"max_length={MAX_LENGTH}",
                                 tasks=TASKS, task_manager=tasks, batch_size=1, log_samples=True)
    log, _ = jaxeval_run.communicate(timeout=600)
    assert jaxeval_run.returncode == 0, log[-4000:]
    results = json.loads(Path(glob.glob(str(out / "**" / "results_*.json"), recursive=True)[0]).read_text())
    samples = {}
    for task in TASKS:
        (path,) = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
        samples[task] = samples_by_doc([json.loads(line) for line in Path(path).read_text().splitlines()])
    hf_samples = {task: samples_by_doc(hf["samples"][task]) for task in TASKS}
    return ({"results": hf["results"], "samples": hf_samples},
            {"results": results["results"], "samples": samples, "model_dir": str(model_dir),
             "config": results["config"]})


def loglikelihoods(sample: dict) -> list[tuple[float, bool | None]]:
    """(log-likelihood, is_greedy or None) per request of a logged sample."""
    def flag(v):  # a logged file writes the pair as strings ("False")
        return v if isinstance(v, bool) else {"True": True, "False": False}[v]

    out = []
    for resp in sample["resps"]:
        value = resp[0]
        out.append((float(value[0]), flag(value[1])) if isinstance(value, (list, tuple)) else (float(value), None))
    return out


def test_loglikelihoods_match_hf(runs):
    hf, jx = runs
    worst, n, greedy = {}, 0, []
    for task in ("jx_choice", "jx_greedy", "jx_rolling"):
        worst[task] = 0.0
        assert hf["samples"][task].keys() == jx["samples"][task].keys()
        for doc_id, sample in hf["samples"][task].items():
            ours = jx["samples"][task][doc_id]
            assert request_args(ours) == request_args(sample), (task, doc_id)  # the same requests reached the model
            pairs = zip(loglikelihoods(sample), loglikelihoods(ours), strict=True)
            for (ref, ref_greedy), (got, got_greedy) in pairs:
                worst[task] = max(worst[task], abs(ref - got))
                n += 1
                assert got_greedy == ref_greedy, (task, doc_id, ref, got)
                greedy.append(ref_greedy)
    print(f"\n{n} requests, max |delta loglik| per task:", {t: f"{w:.2e}" for t, w in worst.items()})
    tokens = jx["config"]["jaxeval_read_tokens"]
    print("read tokens:", tokens)
    assert 0 < tokens["run"] < tokens["without_prefix_sharing"]  # shared context prefixes were run once
    assert max(worst.values()) < TOL
    assert True in greedy and False in greedy  # the is_greedy comparison saw both answers


def test_generations_match_hf(runs):
    hf, jx = runs
    texts = []
    for doc_id, sample in hf["samples"]["jx_generate"].items():
        ours = jx["samples"]["jx_generate"][doc_id]
        assert request_args(ours) == request_args(sample)
        assert ours["resps"] == sample["resps"], (doc_id, sample["resps"], ours["resps"])
        texts.append(sample["resps"][0][0])
    print("\ngenerations:", texts)
    assert len(set(texts)) > 1 and all(texts)  # real, different generations
    # the data exercises both ends: a stop string within max_gen_toks, and max_gen_toks reached
    model_dir = Path(jx["model_dir"])
    prompts = [request_args(s)[0][0] for s in hf["samples"]["jx_generate"].values()]
    tok, full = greedy_tokens(model_dir, prompts, GEN_TOKENS, keep=MAX_LENGTH - GEN_TOKENS)
    stopped = [text != tok.decode(new, skip_special_tokens=True) for text, new in zip(texts, full)]
    assert True in stopped and False in stopped, stopped


def test_metrics_match_hf(runs):
    hf, jx = runs
    for task in TASKS:
        ref, got = hf["results"][task], jx["results"][task]
        metrics = [k for k in ref if "," in k and "stderr" not in k]
        assert metrics, ref
        for key in metrics:
            print(f"{task} {key}: hf {ref[key]} jaxeval {got[key]}")
            assert got[key] == pytest.approx(ref[key], rel=1e-5, abs=1e-6), (task, key)


@pytest.fixture(scope="module")
def both_models(setup):
    """(JaxevalLM on an already loaded jaxeval Model, lm-eval's HFLM) on the tiny model folder."""
    import jaxeval
    from jaxeval.lm_eval import JaxevalLM
    from lm_eval.models.huggingface import HFLM

    model_dir = setup[0]
    ours = JaxevalLM(pretrained=jaxeval.load_model(model_dir, dtype="float32"), max_length=MAX_LENGTH)
    return ours, HFLM(pretrained=str(model_dir), device="cpu", dtype="float32", max_length=MAX_LENGTH)


def test_tokenisation_and_chat_template_as_hf(both_models):
    ours, hf = both_models
    assert (ours.prefix_token_id, ours.eot_token_id, ours.max_length) == (hf.prefix_token_id, hf.eot_token_id,
                                                                          hf.max_length)
    assert ours.tokenizer_name == hf.tokenizer_name and ours.chat_template(True) == hf.chat_template(True)
    for text in ("Hello river", "<|endoftext|>Hello river", " leading space", ""):
        for special in (None, True, False):
            assert ours.tok_encode(text, add_special_tokens=special) == hf.tok_encode(text, add_special_tokens=special)
        assert ours._encode_pair(text or "x", " stone") == hf._encode_pair(text or "x", " stone")
    chats = ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a river."}],
             [{"role": "user", "content": "Name a river."}, {"role": "assistant", "content": "The"}])
    for chat, prompt in zip(chats, (True, False)):
        assert ours.apply_chat_template(chat, prompt) == hf.apply_chat_template(chat, prompt)
    for context in ("Q: where?", "<|endoftext|>Q: where?", " ".join(WORDS)):
        want = hf.tok_batch_encode([context], left_truncate_len=20)[0][0].tolist()
        assert ours._prompt_ids(context, 20) == want


def test_unknown_model_args_are_refused(both_models):
    from jaxeval.lm_eval import JaxevalLM

    with pytest.raises(ValueError, match="unknown top_k"):
        JaxevalLM(pretrained=both_models[0].model, top_k=3)
    with pytest.raises(ValueError, match="max_length=1000 is outside"):
        JaxevalLM(pretrained=both_models[0].model, max_length=1000)


def test_read_plan_merges_one_token_continuations():
    from jaxeval.engine.backend import ReadResult
    from jaxeval.lm_eval.requests import plan_reads, score_window

    windows = [score_window([5, 6, 7], [c], 8) for c in (11, 12, 13)] + [score_window([5, 6, 7], [11, 12], 8),
                                                                         score_window(list(range(1, 12)), [3], 8)]
    plan = plan_reads(windows)
    assert len(plan.reads) == 3  # the three one-token choices share one read
    merged = next(r for r in plan.reads if r[2].shape[1] > 1)
    assert merged[2].shape == (1, 4) and merged[1].tolist() == [3]  # 3 columns padded to 4
    assert windows[-1][0].tolist() == list(range(4, 12)) + [3]  # cut from the left to max_length + 1
    results = []
    for ids, positions, tokens in plan.reads:  # a fake model: log p = -token id, top-1 always 11
        results.append(ReadResult(top1=np.full(len(positions), 11, np.int32), logprobs=-tokens.astype(np.float32)))
    assert plan.answers(results) == [(-11.0, True), (-12.0, False), (-13.0, False), (-23.0, False), (-3.0, False)]


def test_generation_settings_follow_lm_eval():
    from jaxeval.lm_eval.requests import gen_settings

    greedy = gen_settings({"until": "\n", "max_new_tokens": 5, "max_gen_toks": 7, "temperature": 0.7,
                           "do_sample": False, "top_k": 40}, 256)
    assert (greedy.until, greedy.max_gen_toks, greedy.temperature, greedy.top_p) == (["\n"], 7, 0.0, 1.0)
    sampled = gen_settings({"temperature": 0.8, "top_p": 0.9}, 256)
    assert (sampled.max_gen_toks, sampled.temperature, sampled.top_p) == (256, 0.8, 0.9)
    with pytest.raises(ValueError, match="top_k=40"):
        gen_settings({"do_sample": True, "temperature": 1.0, "top_k": 40}, 256)
    with pytest.raises(ValueError, match="num_beams"):
        gen_settings({"num_beams": 4}, 256)
    with pytest.raises(ValueError, match="not supported by jaxeval"):
        gen_settings({"until": [], "penalty_alpha": 0.6}, 256)


def test_stop_strings_that_are_special_tokens_end_the_text(both_models):
    from jaxeval.lm_eval.requests import generation_text

    tok = both_models[0].tokenizer
    tokens = tok.encode("river stone<|im_end|> more text", add_special_tokens=False)
    assert generation_text(tokens, ["<|im_end|>"], tok) == "river stone"  # as HF's stop criteria cut it
    assert generation_text(tokens, ["ton", "<|im_end|>"], tok) == "river s"
    assert generation_text(tokens, [], tok) == "river stone more text"


def test_registration_keeps_the_builtin_models():
    import jaxeval.lm_eval
    from lm_eval.api.registry import get_model

    assert get_model("jaxeval") is jaxeval.lm_eval.JaxevalLM
    assert get_model("hf").__name__ == "HFLM"


def test_import_jaxeval_does_not_import_lm_eval():
    code = "import sys, jaxeval, jaxeval.api; assert 'lm_eval' not in sys.modules, 'lm_eval imported'"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("mesh", ["tensor=2", None], ids=["mesh-across-processes", "data-parallel"])
def test_two_processes_match_one(setup, runs, mesh, tmp_path):
    """The same command on two local processes (one CPU device each): process 0 drives lm-eval, process 1
    serves its engine calls, either inside one mesh spanning both or each running half the calls."""
    model_dir, task_dir, _ = setup
    _, one = runs
    model_args = f"pretrained={model_dir},dtype=float32,max_length={MAX_LENGTH},prefill_chunk=16"
    model_args += f",mesh={mesh}" if mesh else ""
    command = [sys.executable, "-m", "jaxeval.lm_eval", "--model", "jaxeval", "--model_args", model_args,
               "--tasks", ",".join(TASKS), "--include_path", str(task_dir), "--batch_size", "8",
               "--output_path", str(tmp_path), "--log_samples"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXEVAL_")}
    env |= {**OFFLINE, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO), "JAXEVAL_NUM_PROCESSES": "2",
            "JAXEVAL_COORDINATOR": f"127.0.0.1:{free_port()}"}
    jobs = [subprocess.Popen(command, env={**env, "JAXEVAL_PROCESS_ID": str(i)}, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for i in range(2)]
    logs = [job.communicate(timeout=900)[0] for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], [log[-3000:] for log in logs]
    assert "exact_match" in logs[0] and "exact_match" not in logs[1]  # lm-eval ran on process 0 only
    assert len(glob.glob(str(tmp_path / "**" / "results_*.json"), recursive=True)) == 1
    for task in TASKS:
        (path,) = glob.glob(str(tmp_path / "**" / f"samples_{task}_*.jsonl"), recursive=True)
        two = samples_by_doc([json.loads(line) for line in Path(path).read_text().splitlines()])
        assert two.keys() == one["samples"][task].keys()
        for doc_id, sample in one["samples"][task].items():
            if task == "jx_generate":
                assert two[doc_id]["resps"] == sample["resps"]
                continue
            for (ref, ref_greedy), (got, got_greedy) in zip(loglikelihoods(sample), loglikelihoods(two[doc_id]),
                                                            strict=True):
                assert got == pytest.approx(ref, abs=1e-5) and got_greedy == ref_greedy, (task, doc_id)


@pytest.mark.slow
def test_chat_template_runs_match_hf(setup, both_models):
    """--apply_chat_template: the same chat-formatted requests, log-likelihoods and generations as hf."""
    from lm_eval.tasks import TaskManager

    _, task_dir, _ = setup
    tasks = TaskManager(include_path=str(task_dir), include_defaults=False)
    ours, hf = (lm_eval.simple_evaluate(model=lm, tasks=["jx_choice", "jx_generate"], task_manager=tasks,
                                        apply_chat_template=True, log_samples=True) for lm in both_models)
    assert request_args(hf["samples"]["jx_generate"][0])[0][0].startswith("<|im_start|>user\n")
    for task in ("jx_choice", "jx_generate"):
        for ref, got in zip(hf["samples"][task], ours["samples"][task], strict=True):
            assert request_args(got) == request_args(ref)
            if task == "jx_generate":
                assert got["resps"] == ref["resps"]
            else:
                for (a, a_greedy), (b, b_greedy) in zip(loglikelihoods(ref), loglikelihoods(got), strict=True):
                    assert abs(a - b) < TOL and a_greedy == b_greedy
