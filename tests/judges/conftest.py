"""Misbehaving OpenAI-style servers on loopback, for the HTTP judge's failure handling."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

GOOD = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}


class FakeServer:
    """Answers POSTs by `behaviour(server, handler) -> (status, body bytes, headers)`; records requests."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.requests: list[dict] = []  # {"path", "headers", "body"}
        self.release = threading.Event()  # set at teardown so sleeping handlers end at once
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers),
                                            "body": json.loads(raw)})
                result = server.behaviour(server, self)
                if result is None:  # the behaviour wrote (or refused to write) the answer itself
                    return
                status, body, headers = result
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up (timeout test)
                    pass

        lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    servers = []

    def start(behaviour):
        servers.append(FakeServer(behaviour))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def refused_url():
    """A loopback URL where nothing listens (the port was just free)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
