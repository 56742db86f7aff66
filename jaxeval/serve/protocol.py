"""The OpenAI chat-completions request and response shapes that `jaxeval serve` speaks.

parse_chat_request checks a decoded JSON body and raises RequestError (-> HTTP 4xx with an
OpenAI-style error body) for anything the server cannot honour exactly: unsupported options are
refused rather than silently ignored.
"""

from __future__ import annotations

import dataclasses
import time
import uuid

ROLES = ("system", "user", "assistant", "tool", "developer")
DEFAULT_MAX_TOKENS = 512
# Accepted and ignored: they do not change the completion (or only its bookkeeping).
IGNORED_FIELDS = frozenset({"user", "metadata", "store", "service_tier", "stream_options", "parallel_tool_calls"})
# Accepted only at a neutral value (null is always accepted).
NEUTRAL_FIELDS = {"n": (1,), "stream": (False,), "presence_penalty": (0,), "frequency_penalty": (0,),
                  "logprobs": (False,), "top_logprobs": (0,), "logit_bias": ({},), "tools": ([],),
                  "tool_choice": ("none",), "response_format": ({"type": "text"},)}


class RequestError(Exception):
    """A request the server refuses: HTTP `status`, OpenAI error `param` and `code`."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.param, self.code = status, param, code

    def body(self) -> dict:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": str(self), "type": kind, "param": self.param, "code": self.code}}


@dataclasses.dataclass(frozen=True)
class ChatRequest:
    messages: list[dict]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: tuple[str, ...]


def parse_chat_request(body, served_model: str) -> ChatRequest:
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != served_model:
        raise RequestError(f"model {model!r} is not served here; this server serves {served_model!r}",
                           status=404, param="model", code="model_not_found")
    for name, neutral in NEUTRAL_FIELDS.items():
        value = body.get(name)
        if value is not None and not any(value == v and type(value) is not bool or value is v for v in neutral):
            raise RequestError(f"{name}={value!r} is not supported by jaxeval serve (only {neutral[0]!r})",
                               param=name, code="unsupported_parameter")
    unknown = sorted(set(body) - {"model", "messages", "max_tokens", "max_completion_tokens", "temperature",
                                  "top_p", "seed", "stop"} - set(NEUTRAL_FIELDS) - IGNORED_FIELDS)
    if unknown:
        raise RequestError(f"unknown parameter {unknown[0]!r}", param=unknown[0], code="unknown_parameter")
    return ChatRequest(messages=_messages(body.get("messages")), max_tokens=_max_tokens(body),
                       temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
                       top_p=_top_p(body), seed=_seed(body), stop=_stop(body.get("stop")))


def _messages(messages) -> list[dict]:
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list of {role, content} objects", param="messages")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise RequestError(f"{where} must be an object with role one of {', '.join(ROLES)}", param=where)
        content = m.get("content")
        if isinstance(content, list):  # content parts: only text parts can be honoured
            if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                       for p in content):
                raise RequestError(f"{where}.content: only text parts are supported", param=f"{where}.content")
            content = "".join(p["text"] for p in content)
        if not isinstance(content, str):
            raise RequestError(f"{where}.content must be a string or a list of text parts",
                               param=f"{where}.content")
        role = "system" if m["role"] == "developer" else m["role"]
        out.append({"role": role, "content": content})
    return out


def _max_tokens(body) -> int:
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    value = body.get(name)
    if value is None:
        return DEFAULT_MAX_TOKENS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RequestError(f"{name} must be an integer >= 1, got {value!r}", param=name)
    return value


def _number(body, name, default, low, high) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise RequestError(f"{name} must be a number in [{low}, {high}], got {value!r}", param=name)
    return float(value)


def _top_p(body) -> float:
    value = _number(body, "top_p", 1.0, 0.0, 1.0)
    if value == 0:
        raise RequestError("top_p must be > 0", param="top_p")
    return value


def _seed(body) -> int:
    value = body.get("seed")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 32:
        raise RequestError(f"seed must be an integer in [0, 2**32), got {value!r}", param="seed")
    return value


def _stop(stop) -> tuple[str, ...]:
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or len(stops) > 4 or any(not isinstance(s, str) or not s for s in stops):
        raise RequestError("stop must be a non-empty string or a list of up to 4 non-empty strings", param="stop")
    return tuple(stops)


def chat_response(model: str, text: str, finish_reason: str, prompt_tokens: int, completion_tokens: int) -> dict:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                         "finish_reason": "length" if finish_reason == "length" else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def models_response(model: str, created: int) -> dict:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": created, "owned_by": "jaxeval"}]}
