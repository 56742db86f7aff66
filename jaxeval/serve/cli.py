"""The `jaxeval serve MODEL --port N` sub-command."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys

LOOPBACK = "127.0.0.1"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from jaxeval.options.model import ModelOptions
    from jaxeval.options.settings import add_flags

    add_flags(p, ModelOptions, positional=("model",))  # every model flag `jaxeval run` has: quantize, mesh, kv_cache...
    p.add_argument("--port", type=int, default=8000, help="TCP port (0: any free port, printed at start)")
    p.add_argument("--host", default=LOOPBACK,
                   help="address to bind; loopback by default. Anything else exposes the model to the network")
    p.add_argument("--served_model_name", default=None, help="model id clients send (default: folder name)")
    p.add_argument("--api_key_env", default=None,
                   help="NAME of an environment variable holding a key clients must send as Bearer token")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_serve(args) -> int:
    from jaxeval.api import load_model
    from jaxeval.errors import ConfigError
    from jaxeval.options.model import ModelOptions
    from jaxeval.serve.server import make_server, server_url

    if not 0 <= args.port < 65536:
        raise ConfigError(f"--port {args.port}: expected 0..65535")
    if args.api_key_env and not os.environ.get(args.api_key_env):  # fail before the model loads
        raise ConfigError(f"--api_key_env {args.api_key_env}: that environment variable is not set or empty")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    options = ModelOptions.of(args)
    model = load_model(options.model, **options.load_arguments())
    server = make_server(model, host=args.host, port=args.port, served_name=args.served_model_name,
                         api_key_env=args.api_key_env)
    if not _is_loopback(args.host):
        print(f"jaxeval serve: WARNING: listening on {args.host}, reachable from other machines"
              f"{'' if args.api_key_env else ' without any API key'}", file=sys.stderr)
    print(f"serving {server.service.served_name!r} at {server_url(server)} (POST /chat/completions, "
          "GET /models); Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
