"""A judge behind an OpenAI-compatible chat-completions API (OpenAI, vLLM, `jaxeval serve` ...).

Standard library only. Each prompt is sent as one user turn (after an optional system message).
Failed attempts are retried with exponential backoff and jitter; what still fails after the last
attempt comes back as a JudgeReply with text=None and an error, and is counted by kind:

  timeout      no answer within `timeout` seconds (per socket operation)
  connection   refused, reset or closed before an answer
  protocol     the peer did not speak HTTP
  http_<code>  an HTTP error status (3xx: redirects are refused; 3xx and 4xx other than
               408/409/429 are not retried)
  not_json     the body is not JSON
  no_content   JSON without a string choices[0].message.content

The API key is read from the environment variable named by `api_key_env` at each request; it is
never stored on the judge, and it is registered with jaxeval.secrets, which scrubs it (whole or
in part) from every reply, error text and log line before anything is cut or kept.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from jaxeval.errors import ConfigError
from jaxeval.judges.base import FailureCounter, JudgeReply
from jaxeval.secrets import register, scrub

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
NOT_RETRIED_STATUS = frozenset(range(300, 500)) - {408, 409, 429}  # redirects are never followed


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would resend the Authorization header to wherever they point."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError(code)


class JudgeCallError(Exception):
    """One failed attempt: `kind` is the failure class counted in the summary."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.retry_after = kind, retry_after

    @property
    def retried(self) -> bool:
        if self.kind.startswith("http_"):
            return int(self.kind[5:]) not in NOT_RETRIED_STATUS
        return True


class HttpJudge:
    """Judge calling POST {base_url}/chat/completions.

    base_url: e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8000/v1".
    retries: extra attempts after the first; backoff * 2**attempt seconds between them (capped at
    max_backoff, or the server's Retry-After), times (1 + jitter * u) with u drawn from a generator
    seeded by (seed, request number), so waits are reproducible. `sleep` is injectable for tests.
    concurrency: requests in flight at once (replies keep prompt order).
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY",
                 temperature: float = 0.0, top_p: float | None = None, max_tokens: int = 1024,
                 system: str | None = None, timeout: float = 60.0, retries: int = 3, backoff: float = 1.0,
                 max_backoff: float = 60.0, jitter: float = 0.25, seed: int = 0, concurrency: int = 1,
                 request_seed: int | None = None, sleep: Callable[[float], None] = time.sleep):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError(f"judge base URL {base_url!r}: expected http(s)://HOST[:PORT]/PATH")
        if parsed.username or parsed.password:
            raise ConfigError("judge base URL: credentials in the URL are not accepted; put the key in the "
                              f"environment variable named by api_key_env (now {api_key_env!r})")
        if not model:
            raise ConfigError("judge: model name is empty")
        if not api_key_env or not api_key_env.replace("_", "").isalnum():
            raise ConfigError(f"judge: api_key_env must be an environment variable NAME, got {api_key_env!r}")
        for name, value, low in (("timeout", timeout, 0), ("backoff", backoff, -1), ("max_backoff", max_backoff, -1),
                                 ("jitter", jitter, -1)):
            if not isinstance(value, (int, float)) or not value > low:
                raise ConfigError(f"judge: {name} must be a number {'> 0' if low == 0 else '>= 0'}, got {value!r}")
        for name, value, low in (("retries", retries, 0), ("max_tokens", max_tokens, 1),
                                 ("concurrency", concurrency, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"judge: {name} must be an integer >= {low}, got {value!r}")
        url = base_url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        self.model, self.api_key_env = model, api_key_env
        self.temperature, self.top_p, self.max_tokens, self.system = temperature, top_p, max_tokens, system
        self.request_seed = request_seed
        self.timeout, self.retries, self.backoff, self.max_backoff = timeout, retries, backoff, max_backoff
        self.jitter, self.seed, self.concurrency, self.sleep = jitter, seed, concurrency, sleep
        self.counter = FailureCounter()
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self._lock = threading.Lock()
        self._requests = 0
        proxies = {} if parsed.hostname in LOOPBACK_HOSTS else None  # loopback never goes through a proxy
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies), _NoRedirect())

    def __repr__(self) -> str:
        return f"HttpJudge(url={self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def settings(self) -> dict:
        """What a results file records about this judge (never the key itself)."""
        return {"backend": "http", "url": self.url, "model": self.model, "api_key_env": self.api_key_env,
                "temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens,
                "system": self.system, "seed": self.request_seed, "timeout_s": self.timeout,
                "retries": self.retries, "backoff_s": self.backoff, "max_backoff_s": self.max_backoff,
                "jitter": self.jitter, "concurrency": self.concurrency}

    def summary(self) -> dict:
        """Calls, failures and retries by kind, and token usage, for results files."""
        with self._lock:
            usage = dict(self.usage)
        return {**self.counter.summary(), "usage": usage}

    def complete(self, prompts: Sequence[str]) -> list[JudgeReply]:
        if isinstance(prompts, str):
            raise TypeError("HttpJudge.complete takes a list of prompts, not one string")
        with self._lock:
            first = self._requests
            self._requests += len(prompts)
        jobs = [(first + i, p) for i, p in enumerate(prompts)]
        if self.concurrency == 1 or len(jobs) < 2:
            return [self._complete_one(n, p) for n, p in jobs]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(jobs))) as pool:
            return list(pool.map(lambda job: self._complete_one(*job), jobs))

    def _complete_one(self, request_no: int, prompt: str) -> JudgeReply:
        self.counter.record_call()
        rng = random.Random(f"{self.seed}:{request_no}")
        for attempt in range(self.retries + 1):
            try:
                return JudgeReply(text=scrub(self._post(prompt)), error=None)
            except JudgeCallError as e:
                message = scrub(f"{e.kind}: {e}")
                if attempt == self.retries or not e.retried:
                    self.counter.record_failure(e.kind)
                    log.warning("judge request %d failed after %d attempt(s): %s", request_no, attempt + 1, message)
                    return JudgeReply(text=None, error=message)
                self.counter.record_retry(e.kind)
                wait = min(self.max_backoff, self.backoff * 2 ** attempt)
                if e.retry_after is not None:
                    wait = min(self.max_backoff, max(wait, e.retry_after))
                wait *= 1 + self.jitter * rng.random()
                log.info("judge request %d attempt %d failed (%s); retrying in %.2fs", request_no, attempt + 1,
                         message, wait)
                self.sleep(wait)
        raise AssertionError("unreachable")

    def _body(self, prompt: str) -> bytes:
        messages = ([{"role": "system", "content": self.system}] if self.system is not None else [])
        messages.append({"role": "user", "content": prompt})
        body = {"model": self.model, "messages": messages, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "n": 1}
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.request_seed is not None:
            body["seed"] = self.request_seed
        return json.dumps(body).encode()

    def _post(self, prompt: str) -> str:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            register(key)
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=self._body(prompt), headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            detail = _read_error_body(e)
            raise JudgeCallError(f"http_{e.code}", f"HTTP {e.code} from {self.url}{detail}",
                                 _retry_after(e.headers)) from None
        except urllib.error.URLError as e:
            raise _network_error(e.reason, self.url) from None
        except (OSError, http.client.HTTPException) as e:
            raise _network_error(e, self.url) from None
        except ValueError as e:  # http.client refuses a header value (a key with a newline in it)
            raise JudgeCallError("protocol", f"request not sent: {e}") from None
        return self._parse(raw)

    def _parse(self, raw: bytes) -> str:
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise JudgeCallError("not_json", f"body is not JSON: {_preview(raw)}") from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise JudgeCallError("no_content", f"JSON without a string choices[0].message.content: {_preview(raw)}")
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            with self._lock:
                for name in self.usage:
                    if isinstance(usage.get(name), int):
                        self.usage[name] += usage[name]
        return content


def _network_error(reason, url: str) -> JudgeCallError:
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return JudgeCallError("timeout", f"no answer from {url} within the timeout")
    if isinstance(reason, http.client.HTTPException) and not isinstance(reason, http.client.RemoteDisconnected):
        return JudgeCallError("protocol", f"{url} did not answer in HTTP ({type(reason).__name__})")
    return JudgeCallError("connection", f"{url}: {type(reason).__name__}: {reason}")


def _read_error_body(e: urllib.error.HTTPError) -> str:
    try:
        body = e.read()
    except (OSError, http.client.HTTPException):
        return ""
    return f": {_preview(body)}" if body else ""


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _preview(raw: bytes, limit: int = 200) -> str:
    """The start of a body for an error message: scrubbed whole first, so no cut splits a key."""
    text = scrub(raw.decode("utf-8", errors="replace"))
    return repr(text[:limit] + ("..." if len(text) > limit else ""))
