"""An OpenAI-compatible chat-completions server on the jaxeval engine (standard library http.server).

  POST /v1/chat/completions   one completion (n=1, no streaming) with usage counts
  GET  /v1/models             the one served model
  GET  /health                {"status": "ok"}

Requests are handled on threads, but generation is serialised: one Model.generate at a time.
Errors come back as OpenAI-style JSON bodies: {"error": {"message", "type", "param", "code"}}.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jaxeval.errors import InputTooLongError, JaxevalError
from jaxeval.judges.chat import chat_prompt_ids
from jaxeval.serve.protocol import RequestError, chat_response, models_response, parse_chat_request

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 2 ** 20  # a 128k-token prompt is well under 1 MiB
COMPLETIONS_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")


class ChatService:
    """The model behind the server: validates requests and runs them one at a time."""

    def __init__(self, model, served_name: str, *, api_key: str | None = None):
        self.model, self.served_name = model, served_name
        self.created = int(time.time())
        self._api_key = api_key
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "completions": 0, "errors": 0}
        self._stats_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ChatService(model={self.served_name!r})"

    def authorized(self, header: str | None) -> bool:
        if self._api_key is None:
            return True
        return header is not None and hmac.compare_digest(header.encode(), f"Bearer {self._api_key}".encode())

    def count(self, name: str) -> None:
        with self._stats_lock:
            self.stats[name] += 1

    def complete(self, body) -> dict:
        request = parse_chat_request(body, self.served_name)
        with self._lock:  # one request at a time on the model (and its tokenizer, not thread-safe)
            try:
                ids = chat_prompt_ids(self.model.tokenizer, request.messages)
            except (JaxevalError, ValueError, TypeError) as e:  # e.g. a template that rejects this role order
                raise RequestError(f"messages could not be rendered with the chat template: {e}",
                                   param="messages") from None
            limit = self.model.config.context_limit
            if len(ids) + request.max_tokens > limit:
                raise RequestError(f"the prompt has {len(ids)} tokens; with max_tokens={request.max_tokens} that "
                                   f"is {len(ids) + request.max_tokens}, beyond the model's {limit} positions",
                                   param="messages", code="context_length_exceeded")
            try:
                out = self.model.generate([ids], request.max_tokens, stop=list(request.stop) or None,
                                          temperature=request.temperature, top_p=request.top_p,
                                          seed=request.seed, batch_size=1)[0]
            except (InputTooLongError, ValueError) as e:
                raise RequestError(str(e)) from None
        return chat_response(self.served_name, out.text, out.finish_reason, len(ids), len(out.tokens))


class _Handler(BaseHTTPRequestHandler):
    server_version = "jaxeval-serve"
    protocol_version = "HTTP/1.1"
    service: ChatService  # set on the subclass made by make_server

    def log_message(self, format, *args):  # requests go to logging, never headers
        log.info("%s %s", self.address_string(), format % args)

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, error: RequestError) -> None:
        self.service.count("errors")
        self._send(error.status, error.body())

    def _route(self, paths) -> bool:
        return self.path.split("?", 1)[0].rstrip("/") in paths

    def do_GET(self):
        if self._route(("/health",)):
            self._send(200, {"status": "ok"})
        elif not self.service.authorized(self.headers.get("Authorization")):
            self._error(RequestError("invalid or missing API key", status=401, code="invalid_api_key"))
        elif self._route(MODELS_PATHS):
            self._send(200, models_response(self.service.served_name, self.service.created))
        elif self._route(COMPLETIONS_PATHS):
            self._error(RequestError("use POST for chat completions", status=405))
        else:
            self._error(RequestError(f"no route {self.path!r}", status=404))

    def do_POST(self):
        self.service.count("requests")
        try:
            body = self._read_json()  # read before answering, so the connection stays usable
            if not self.service.authorized(self.headers.get("Authorization")):
                raise RequestError("invalid or missing API key", status=401, code="invalid_api_key")
            if self._route(MODELS_PATHS):
                raise RequestError("use GET for the model list", status=405)
            if not self._route(COMPLETIONS_PATHS):
                raise RequestError(f"no route {self.path!r}", status=404)
            response = self.service.complete(body)
        except RequestError as e:
            self._error(e)
            return
        except Exception as e:  # a jaxeval bug or a device failure: answer 500, keep serving
            log.exception("chat completion failed")
            self._error(RequestError(f"internal error: {type(e).__name__}: {e}", status=500))
            return
        self.service.count("completions")
        self._send(200, response)

    def _read_json(self):
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise RequestError("chunked request bodies are not supported; send Content-Length", status=411)
        if length is None or not length.isdigit():
            self.close_connection = True
            raise RequestError("a JSON body with a Content-Length header is required", status=411)
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            raise RequestError(f"request body of {length} bytes exceeds {MAX_BODY_BYTES}", status=413)
        raw = self.rfile.read(int(length))
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RequestError(f"the request body is not valid JSON ({e})") from None


def make_server(model, *, host: str = "127.0.0.1", port: int = 0, served_name: str | None = None,
                api_key_env: str | None = None) -> ThreadingHTTPServer:
    """A ready (bound, not yet serving) server; call serve_forever() on it, shutdown() to stop.

    served_name: the model id clients send (default: the model folder's name). api_key_env: the
    NAME of an environment variable holding a key that clients must send as a Bearer token.
    """
    from jaxeval.errors import ConfigError

    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ConfigError(f"--api_key_env {api_key_env}: that environment variable is not set or empty")
        from jaxeval.secrets import register

        register(api_key)
    name = served_name or os.path.basename(os.path.normpath(str(model.path)))
    service = ChatService(model, name, api_key=api_key)
    handler = type("Handler", (_Handler,), {"service": service})
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("Server", (ThreadingHTTPServer,), {"daemon_threads": True, "address_family": family})
    try:
        server = server_class((host, port), handler)
    except OSError as e:
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    server.service = service
    return server


def server_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/v1"
