"""Build the tool_calls and rules_* configs of the embedded longctx-agent-bench sample.

    python scripts/build_agent_sessions.py [--out jaxeval/assets/agent_bench_sample]

Writes `<out>/{tool_calls,rules_en,rules_cs,rules_de}/8k-00000-of-00001.parquet` in the hub
layout and schema of docs/provenance.md#agent-bench, and a SOURCE.md per config. Every text is a
synthetic agent session (made up here, no third-party text) in the Qwen3.5 chat markup of the
card: tool definitions as JSON lines inside <tools>, documented project commands in the system
prompt, calls as <tool_call><function=...><parameter=...> blocks, shell commands and their
output in <tool_response> observations. Texts are cut to exactly 8,193 tokens of the embedded
tokenizer (jaxeval/assets/tiny_llama). Deterministic: fixed seeds.

tool_calls: every call's name, parameter names (with their closing ">"), the tag after each
parameter (next) and documented command names are targets; far when the definition ends 512
or more tokens before the target, fresh when far and no call of the same tool lies in the 512
tokens before it.
rules_*: three families (substitution: grep -> rg; redirect: read_file -> bash; required:
make lint before git commit), each in the system prompt and at the end of a later user
message, in English, Czech and German; the three configs share their sessions and texts
without the rule. Targets are the governed actions at least 512 tokens after the rule.
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_agent_sample import cut_to_tokens  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
N_TOKENS = 8193
FAR = 512  # tokens: the card's fixed parameter
TOOL_SESSIONS, RULE_SESSIONS = 2, 2
SEED = 3505

TOOLS = {
    "search_files": ("Search file contents for a regular expression.", ("pattern", "path")),
    "read_file": ("Read a file, optionally from a line on.", ("path", "start_line")),
    "edit_file": ("Replace an exact string in a file.", ("path", "old_text", "new_text")),
    "list_directory": ("List the entries of a directory.", ("path",)),
    "bash": ("Run a shell command in the repository and return its output.", ("command",)),
}
COMMANDS = {  # invented project commands, documented only in the system prompt
    "qvault-check": "validate the vault schema files",
    "depgraph": "print the import graph of a module",
    "tqsnap": "update the snapshot fixtures of a test",
}
MODULES = ["ledger", "vault", "sched", "parser", "cache", "auth", "render", "stats", "queue", "index"]
WORDS = ["entry", "balance", "token", "window", "record", "offset", "bucket", "handle", "frame", "slot"]

RULES = {  # family -> (rule per language, expected_text, original_text)
    "substitution": ({"en": "Do not use grep in this repository; search with rg instead.",
                      "cs": "V tomto repozitáři nepoužívej grep; k hledání používej rg.",
                      "de": "Verwende in diesem Repository kein grep; suche stattdessen mit rg."}, "rg", "grep"),
    "redirect": ({"en": "Do not call the read_file tool; read files with the bash tool and cat instead.",
                  "cs": "Nevolej nástroj read_file; soubory čti nástrojem bash pomocí cat.",
                  "de": "Rufe das Werkzeug read_file nicht auf; lies Dateien mit dem Werkzeug bash und cat."},
                 "bash", "read_file"),
    "required": ({"en": "Always run make lint before every git commit.",
                  "cs": "Před každým git commit vždy spusť make lint.",
                  "de": "Führe vor jedem git commit immer make lint aus."}, "make", "git"),
}
SOURCE = {"dataset": "jaxeval/synthetic-agent-sessions", "revision": "build_agent_sessions.py",
          "license": "CC BY 4.0", "tokens": N_TOKENS, "documents": 1}


def system_prompt() -> tuple[str, list[dict]]:
    """The system message and its definitions (spans relative to the message)."""
    text = ("<|im_start|>system\nYou are a coding agent working in the repository /repo. Use the tools to "
            "inspect and change the code, then commit your work.\n\n# Tools\n\nYou have access to the "
            "following functions:\n\n<tools>\n")
    definitions = []
    for name, (description, params) in TOOLS.items():
        line = json.dumps({"type": "function", "function": {
            "name": name, "description": description,
            "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in params},
                           "required": list(params)}}})
        definitions.append({"id": f"tool:{name}", "text": line, "char": [len(text), len(text) + len(line)]})
        text += line + "\n"
    text += "</tools>\n\nProject commands (run them with the bash tool):\n"
    for name, description in COMMANDS.items():
        line = f"- {name} <target>: {description}"
        definitions.append({"id": f"command:{name}", "text": line, "char": [len(text), len(text) + len(line)]})
        text += line + "\n"
    text += ("\nTo call a function, reply with <tool_call><function=NAME><parameter=NAME>value</parameter>"
             "</function></tool_call>, one block per call.")
    return text, definitions  # the caller closes the message


def code_lines(rng: random.Random, module: str, n: int) -> str:
    lines = []
    for i in range(n):
        word, other = rng.choice(WORDS), rng.choice(WORDS)
        lines.append(rng.choice([
            f"def {word}_{other}(self, {other}):", f"    return self.{word}[{other}] + {rng.randint(1, 99)}",
            f"    if {word} is None:", f"        raise ValueError('{module}: bad {word}')",
            f"class {word.title()}{other.title()}:", f"    {word} = {other}.get('{module}', {i})"]))
    return "\n".join(lines)


def call_block(function: str, params: dict[str, str]) -> tuple[str, list[tuple[int, int, str, str]]]:
    """The assistant's call, and its targets as (start, end, kind, definition id) relative to it."""
    text = "<|im_start|>assistant\n<tool_call>\n<function="
    targets = [(len(text), len(text) + len(function) + 1, "name", f"tool:{function}")]
    text += function + ">\n"
    for name, value in params.items():
        targets.append((len(text), len(text) + len("<parameter="), "next", f"tool:{function}"))
        text += "<parameter="
        targets.append((len(text), len(text) + len(name) + 1, "param", f"tool:{function}"))
        text += f"{name}>\n"
        if function == "bash" and value.split()[0] in COMMANDS:
            targets.append((len(text), len(text) + len(value.split()[0]), "command", f"command:{value.split()[0]}"))
        text += f"{value}\n</parameter>\n"
    targets.append((len(text), len(text) + len("</function>"), "next", f"tool:{function}"))
    text += "</function>\n</tool_call><|im_end|>\n"
    return text, targets


def random_turn(rng: random.Random) -> tuple[str, str, dict[str, str], str]:
    """(user text or "", function, params, observation) of one step of the session."""
    module, word = rng.choice(MODULES), rng.choice(WORDS)
    path = f"src/{module}/{word}.py"
    choice = rng.choice(["grep", "read", "edit", "list", "command", "commit", "test", "grep", "read", "commit"])
    if choice == "grep":
        command = f"grep -rn \"{word}_\" src/{module}"
        return "", "bash", {"command": command}, "\n".join(
            f"{path}:{rng.randint(3, 300)}:    {word}_{rng.choice(WORDS)} = None" for _ in range(rng.randint(3, 7)))
    if choice == "read":
        return "", "read_file", {"path": path, "start_line": str(rng.randint(1, 80))}, code_lines(rng, module, 14)
    if choice == "edit":
        return "", "edit_file", {"path": path, "old_text": f"self.{word}", "new_text": f"self._{word}"}, \
            f"Edited {path}: 1 replacement."
    if choice == "list":
        return "", "list_directory", {"path": f"src/{module}"}, "\n".join(f"{w}.py" for w in rng.sample(WORDS, 6))
    if choice == "command":
        name = rng.choice(list(COMMANDS))
        return "", "bash", {"command": f"{name} src/{module}"}, f"$ {name} src/{module}\n" + "\n".join(
            f"{module}.{w}: ok" for w in rng.sample(WORDS, 4))
    if choice == "commit":
        return "", "bash", {"command": f"git commit -am \"{module}: rename {word}\""}, \
            f"[main {rng.getrandbits(28):07x}] {module}: rename {word}\n 1 file changed"
    return (f"Please make sure the {module} tests pass.", "bash", {"command": f"python -m pytest tests/{module}"},
            f"$ python -m pytest tests/{module}\n{rng.randint(5, 40)} passed in {rng.random():.2f}s")


def session(rng: random.Random) -> tuple[str, list[dict], list[tuple[int, int, str, str, str]], list[int]]:
    """A long session: (text, definitions, call targets (start, end, kind, definition, function),
    starts of the user messages' ends (where a user rule may go))."""
    system, definitions = system_prompt()
    text = system + "<|im_end|>\n"
    text += "<|im_start|>user\nThe ledger module loses entries under load. Find and fix the cause.<|im_end|>\n"
    user_ends, targets = [len(text) - len("<|im_end|>\n")], []
    while len(text) < 5.0 * N_TOKENS:
        user, function, params, observation = random_turn(rng)
        if user:
            text += f"<|im_start|>user\n{user}<|im_end|>\n"
            user_ends.append(len(text) - len("<|im_end|>\n"))
        block, block_targets = call_block(function, params)
        targets += [(len(text) + a, len(text) + b, kind, d, function) for a, b, kind, d in block_targets]
        text += block + f"<|im_start|>user\n<tool_response>\n{observation}\n</tool_response><|im_end|>\n"
    return text, definitions, targets, user_ends


def token_index(starts: list[int], char: int) -> int:
    return bisect.bisect_left(starts, char)


def tool_calls_item(tokenizer, rng: random.Random, index: int) -> dict:
    text, definitions, calls, _ = session(rng)
    text = cut_to_tokens(tokenizer, text, N_TOKENS)
    starts = [a for a, _ in tokenizer(text, return_offsets_mapping=True)["offset_mapping"]]
    definition_end = {d["id"]: token_index(starts, d["char"][1]) for d in definitions}
    call_starts: dict[str, list[int]] = {}
    targets = []
    for start, end, kind, definition_id, function in calls:
        if end > len(text):
            break
        at = token_index(starts, start)
        if starts[at] != start:
            continue  # not a token boundary of the builder's tokenizer
        if kind == "name":
            previous = call_starts.setdefault(function, [])
            recent_call = bool(previous) and at - previous[-1] < FAR
            previous.append(at)
        distance = at - definition_end[definition_id]
        far = distance >= FAR
        targets.append({"char": [start, end], "target": text[start:end], "kind": kind, "far": far,
                        "fresh": far and not recent_call, "definition_id": definition_id,
                        "distance_tokens": distance})
    return {"id": f"tool_calls-8k-{index:03d}", "text": text, "definitions": definitions, "targets": targets,
            "sources": [SOURCE]}


def governed_actions(text: str, family: str) -> list[int]:
    """Character positions where the session does what a rule of `family` governs."""
    marker = {"substitution": "<parameter=command>\ngrep ", "redirect": "<function=read_file>",
              "required": "<parameter=command>\ngit commit"}[family]
    skip = {"substitution": len("<parameter=command>\n"), "redirect": len("<function="),
            "required": len("<parameter=command>\n")}[family]
    found, at = [], text.find(marker)
    while at != -1:
        found.append(at + skip)
        at = text.find(marker, at + 1)
    return found


def rules_items(tokenizer, rng: random.Random, context: int) -> dict[str, list[dict]]:
    """The items of one session, per language config: 3 families x 2 placements."""
    full, _, _, user_ends = session(rng)
    without = cut_to_tokens(tokenizer, full, N_TOKENS)
    # the system rule goes at the end of the system prompt; the user rule after a user message
    # a fifth of the way in
    system_end = without.index("<|im_end|>")
    user_at = min((end for end in user_ends if end > len(without) // 5), default=user_ends[-1])
    out = {f"rules_{lang}": [] for lang in ("en", "cs", "de")}
    for family, (rule_by_lang, expected, original) in RULES.items():
        for placement, at in (("system", system_end), ("user", user_at)):
            for lang, rule in rule_by_lang.items():
                line = "\n" + rule
                with_rule = cut_to_tokens(tokenizer, without[:at] + line + without[at:], N_TOKENS)
                starts = [a for a, _ in tokenizer(with_rule, return_offsets_mapping=True)["offset_mapping"]]
                rule_end = token_index(starts, at + len(line))
                targets = []
                for char in governed_actions(without, family):
                    shifted = char + len(line)
                    if char < at or shifted + len(original) > len(with_rule):
                        continue
                    distance = token_index(starts, shifted) - rule_end
                    if distance < FAR or starts[token_index(starts, shifted)] != shifted:
                        continue
                    between = with_rule[at + len(line):shifted]
                    targets.append({"char_without_rule": char, "char_with_rule": shifted, "expected_text": expected,
                                    "original_text": original, "distance_tokens": distance,
                                    "first": not targets, "mentioned": expected in between})
                    if len(targets) == 3:
                        break
                if targets:
                    out[f"rules_{lang}"].append({
                        "id": f"rules_{lang}-8k-{context:03d}-{family}-{placement}", "text_without_rule": without,
                        "text_with_rule": with_rule, "rule": rule, "rule_char": [at, at + len(line)],
                        "family": family, "placement": placement, "lang": lang,
                        "context_id": f"8k-{context:03d}", "targets": targets, "sources": [SOURCE]})
    return out


def main() -> None:
    from transformers import AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, default=REPO / "jaxeval/assets/tiny_llama")
    parser.add_argument("--out", type=Path, default=REPO / "jaxeval/assets/agent_bench_sample")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer))
    rng = random.Random(SEED)
    configs = {"tool_calls": [tool_calls_item(tokenizer, rng, i) for i in range(TOOL_SESSIONS)]}
    for context in range(RULE_SESSIONS):
        for config, items in rules_items(tokenizer, rng, context).items():
            configs.setdefault(config, []).extend(items)
    for config, items in configs.items():
        folder = args.out / config
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(items), folder / "8k-00000-of-00001.parquet", compression="zstd")
        (folder / "SOURCE.md").write_text(
            f"# longctx-agent-bench sample, config `{config}`\n\n`8k-00000-of-00001.parquet`: {len(items)} items "
            f"of {N_TOKENS:,} tokens (embedded tokenizer `../../tiny_llama`), built by "
            "`scripts/build_agent_sessions.py` (fixed seed).\n\nThe texts are synthetic agent sessions written "
            "by that script (no third-party text): made-up tools, project commands, code and shell output in "
            "the Qwen3.5 chat markup of the card. Licence: CC BY 4.0, as the card's agent configs.\n")
        n_targets = sum(len(item["targets"]) for item in items)
        print(f"{config}: {len(items)} items, {n_targets} targets")


if __name__ == "__main__":
    main()
