"""Train the embedded tiny model's tokenizer: byte-level BPE, 4,096 ids, digits one by one.

    python scripts/train_tokenizer.py [--text_dir ../shared/data/text] [--out jaxeval/assets/tiny_llama]

Trained on WikiText-2 (valid + test), Tiny Shakespeare and a little synthetic chat / agent
markup in the Qwen3.5 format, so the tiny model sees the same markup the agent benchmark
texts use. Writes tokenizer.json, tokenizer_config.json (with a ChatML chat template) and
SOURCE.md; never config.json or weights (those belong to the model's training script).

Choices and why:
- Digits are split into single digits before the byte-level split, so a planted number is
  copied digit by digit (as with Qwen's tokenizer) instead of through rare multi-digit tokens.
- `<|endoftext|>` is id 0 and both eos and pad: the tiny model is a base model trained on
  documents separated by `<|endoftext|>`. Chat generation should also stop at `<|im_end|>`
  (as Qwen base models do); that belongs in the model's generation_config, not here.
- No BOS token: texts are read exactly as written, so a 8,193-token item stays 8,193 tokens.
- The agent markup tokens (`<tool_call>`, `<think>`, ...) are single ids but not "special",
  as in Qwen's tokenizers: decoding with skip_special_tokens keeps them, since they are
  content an agent writes. The ChatML control tokens are special.
- Offsets are not trimmed (`trim_offsets=False`), so a token's span includes its leading
  space and a target span such as " 48213." starts exactly at a token.
- The output is deterministic: same inputs, byte-identical files (checked by running twice).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

VOCAB_SIZE = 4096
TEXT_FILES = ("wikitext2_valid.txt", "wikitext2_test.txt", "tinyshakespeare.txt")
CONTROL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # special: ids 0, 1, 2
MARKUP_TOKENS = (  # Qwen3.5 agent markup: single ids, decoded as text
    "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<tools>", "</tools>",
)
SYNTHETIC_SEED = 20240607
SYNTHETIC_SESSIONS = 400

# ChatML as Qwen writes it. Tools go at the end of the system turn as JSON lines inside
# <tools>; assistant tool calls use Qwen3.5's <function=...><parameter=...> blocks; tool
# results go back in a user turn inside <tool_response>.
CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages and messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou have access to the following functions:\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools><|im_end|>\\n' }}"
    "{%- elif messages and messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}"
    "{%- if not loop.first %}{{- '<|im_start|>system\\n' + message['content'] + '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif message['role'] == 'tool' %}"
    "{%- if loop.first or loop.previtem['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}"
    "{%- if loop.last or loop.nextitem['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') }}"
    "{%- for call in message.get('tool_calls', []) %}"
    "{%- set fn = call['function'] if call['function'] is defined else call %}"
    "{{- '\\n<tool_call>\\n<function=' + fn['name'] + '>\\n' }}"
    "{%- for key, value in fn['arguments'].items() %}"
    "{{- '<parameter=' + key + '>\\n' + (value if value is string else (value | tojson)) + '\\n</parameter>\\n' }}"
    "{%- endfor %}"
    "{{- '</function>\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def synthetic_agent_sessions(rng: random.Random, count: int) -> list[str]:
    """Short fake agent sessions in the Qwen3.5 chat markup, so its pieces get merges."""
    tools = ("bash", "read_file", "write_file", "search", "get_weather", "book_flight")
    commands = ("ls -la", "rg TODO src", "git status", "python -m pytest -q", "cat setup.py",
                "grep -rn main .", "pip install numpy", "find . -name '*.py'")
    users = ("Fix the failing test in the parser.", "What is the weather in Paris?",
             "Book a flight for Fiona.", "Find where the config is loaded.",
             "Rename the helper function.", "Why does the build fail?")
    sessions = []
    for _ in range(count):
        picked = rng.sample(tools, 3)
        tool_lines = "\n".join(
            json.dumps({"type": "function", "function": {
                "name": name, "description": f"Run {name}.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                               "required": ["command"]}}})
            for name in picked)
        turns = [f"<|im_start|>system\nYou are a helpful agent.\n\n# Tools\n\n<tools>\n"
                 f"{tool_lines}\n</tools><|im_end|>\n",
                 f"<|im_start|>user\n{rng.choice(users)}<|im_end|>\n"]
        for _ in range(rng.randint(1, 4)):
            name, command = rng.choice(picked), rng.choice(commands)
            turns.append(
                f"<|im_start|>assistant\n<think>\nI should run {command} first.\n</think>\n\n"
                f"<tool_call>\n<function={name}>\n<parameter=command>\n{command}\n"
                f"</parameter>\n</function>\n</tool_call><|im_end|>\n")
            turns.append(f"<|im_start|>user\n<tool_response>\nexit code {rng.randint(0, 2)}, "
                         f"{rng.randint(1, 99999)} bytes\n</tool_response><|im_end|>\n")
        turns.append("<|im_start|>assistant\nDone.<|im_end|>\n<|endoftext|>")
        sessions.append("".join(turns))
    return sessions


def training_texts(text_dir: Path) -> list[str]:
    texts = []
    for name in TEXT_FILES:
        # Line by line, as the trainer counts words per input string anyway.
        texts.extend(line for line in (text_dir / name).read_text("utf-8").splitlines() if line.strip())
    texts.extend(synthetic_agent_sessions(random.Random(SYNTHETIC_SEED), SYNTHETIC_SESSIONS))
    return texts


def train(texts: list[str]) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = [AddedToken(t, special=True, normalized=False) for t in CONTROL_TOKENS]
    markup = [AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=specials + markup,  # ids 0..10, in this order
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tokenizer


def mark_markup_as_content(tokenizer_json: dict) -> dict:
    """The trainer registers every reserved token as special; the markup tokens are content."""
    for added in tokenizer_json["added_tokens"]:
        if added["content"] in MARKUP_TOKENS:
            added["special"] = False
    return tokenizer_json


def save(tokenizer: Tokenizer, out_dir: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer.from_str(json.dumps(mark_markup_as_content(json.loads(tokenizer.to_str()))))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        model_max_length=131072,
        clean_up_tokenization_spaces=False,
        chat_template=CHAT_TEMPLATE,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out_dir))
    # A generic class name, so AutoTokenizer never swaps in a model-specific tokenizer
    # (which in transformers v5 may rebuild the pipeline) once config.json says "llama".
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text("utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    # The template lives in tokenizer_config.json, where every transformers version looks.
    (out_dir / "chat_template.jinja").unlink(missing_ok=True)
    config["chat_template"] = CHAT_TEMPLATE
    # v5 writes `extra_special_tokens` as a list, which v4 (pyproject allows >=4.50) reads
    # as a dict and fails on; `additional_special_tokens` is read by both.
    config["additional_special_tokens"] = config.pop("extra_special_tokens", ["<|im_start|>", "<|im_end|>"])
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")


def check(out_dir: Path) -> None:
    """Fail loudly if the saved folder does not behave as documented."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out_dir))
    assert len(tok) == VOCAB_SIZE, len(tok)
    assert tok.convert_tokens_to_ids("<|endoftext|>") == 0 and tok.eos_token_id == 0
    text = "Fiona booked flight 48213.<tool_call>"
    enc = tok(text, return_offsets_mapping=True)
    pieces = [text[a:b] for a, b in enc["offset_mapping"]]
    assert pieces[-8:-1] == [" ", "4", "8", "2", "1", "3", "."], pieces
    assert pieces[-1] == "<tool_call>", pieces
    assert tok.decode(enc["input_ids"]) == text
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                     add_generation_prompt=True)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", prompt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text_dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "text")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "jaxeval/assets/tiny_llama")
    args = parser.parse_args()
    tokenizer = train(training_texts(args.text_dir))
    save(tokenizer, args.out)
    check(args.out)
    print(f"wrote {args.out} ({VOCAB_SIZE} ids)")


if __name__ == "__main__":
    main()
