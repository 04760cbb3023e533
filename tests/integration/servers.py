"""Test helpers around real servers.

The embedded PostgreSQL and Chroma starters live in the package
(:mod:`pywrapai_graph.testing.servers`, which the shipped pytest plugin uses); they are
re-exported here for the benchmarks. :class:`CountingProxy`: an HTTP front that forwards to
a server and lists the requests a client sent it (to count a store's round trips), or answers
one with a reply queued in :attr:`CountingProxy.replies` instead (to inject a server's error).
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from pywrapai_graph.testing.servers import (
    ChromaServer,
    EmbeddedPostgres,
    docker_available,
    free_port,
)

__all__ = ["ChromaServer", "CountingProxy", "EmbeddedPostgres", "docker_available", "free_port"]

_HOP_HEADERS = frozenset({"host", "connection", "content-length", "transfer-encoding"})


class CountingProxy:
    """Forwards every HTTP request to ``upstream`` and records its method and path; a request
    whose path ends with a key of :attr:`replies` gets the first reply queued there
    (``(status, JSON body)``) instead of the server's."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.requests: list[tuple[str, str]] = []
        self.replies: dict[str, list[tuple[int, bytes]]] = {}
        front = self

        class Handle(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                path = urlparse(self.path).path
                front.requests.append((self.command, path))
                queued = front.replies.get(path.rsplit("/", 1)[-1])
                if queued:
                    self._reply(*queued.pop(0), [("Content-Type", "application/json")])
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    reply = conn.getresponse()
                    data = reply.read()
                finally:
                    conn.close()
                self._reply(reply.status, data, reply.getheaders())

            def _reply(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
                self.send_response_only(status)
                for key, value in headers:
                    if key.lower() not in _HOP_HEADERS:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
