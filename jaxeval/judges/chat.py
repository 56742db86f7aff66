"""Chat messages -> prompt token ids through the tokenizer's own chat template.

Shared by the local judge and `jaxeval serve`, so both prompt a model exactly alike; the
rendering itself is jaxeval.generation's, the one the benchmarks use.
"""

from __future__ import annotations

from jaxeval.generation import chat_prompt_ids, has_chat_template

__all__ = ["chat_prompt_ids", "has_chat_template"]
