"""`jaxeval serve`: an OpenAI-compatible chat-completions server on the jaxeval engine."""

from jaxeval.serve.server import ChatService, make_server, server_url

__all__ = ["ChatService", "make_server", "server_url"]
