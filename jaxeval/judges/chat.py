"""Chat messages -> prompt token ids through the tokenizer's own chat template.

Shared by the local judge and `jaxeval serve`, so both prompt a model exactly alike.
"""

from __future__ import annotations

from jaxeval.errors import ConfigError


def has_chat_template(tokenizer) -> bool:
    return tokenizer is not None and bool(getattr(tokenizer, "chat_template", None))


def chat_prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Render messages with the chat template (plus the assistant turn opener) and tokenize them.

    The template writes any BOS itself, so no special tokens are added on top of it.
    """
    if tokenizer is None:
        raise ConfigError("this model has no tokenizer, so chat messages cannot be turned into tokens")
    if not has_chat_template(tokenizer):
        raise ConfigError(f"tokenizer {getattr(tokenizer, 'name_or_path', '')!r} has no chat template "
                          "(tokenizer_config.json 'chat_template' or chat_template.jinja)")
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return list(tokenizer.encode(text, add_special_tokens=False))
