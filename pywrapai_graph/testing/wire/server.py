"""WireServer: a local HTTP server that answers like an LLM provider, from a script.

The official SDKs talk to it over real HTTP on 127.0.0.1, so a test exercises the SDK, the
wire format and our translation together. Each provider subclass renders scripted replies in
that provider's documented JSON and streaming formats (SSE or NDJSON).

Use it as a context manager::

    with OpenAIWire() as wire:
        wire.reply(ScriptedReply("Hello!", usage=TokenUsage(5, 2)))
        llm = LLM(provider="openai", api_key="test", base_url=wire.base_url)
        llm.chat("Hi")
        wire.requests[0].json["messages"]      # what the SDK sent
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from pywrapai_graph.errors import InvalidStateError
from pywrapai_graph.testing.scripted import ScriptedReply

__all__ = ["RecordedRequest", "WireResponse", "WireServer"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


@dataclass(slots=True)
class WireResponse:
    """What to send back: a whole body, or ``chunks`` written one by one (a stream)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class _Failure:
    status: int
    message: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Raw:
    response: WireResponse


@dataclass(frozen=True, slots=True)
class _Stall:
    seconds: float
    then: ScriptedReply


@dataclass(frozen=True, slots=True)
class _Cut:
    reply: ScriptedReply
    keep: int


_Item = ScriptedReply | _Failure | _Raw | _Stall | _Cut


def sse(events: Iterable[Any], *, event_names: Iterable[str] | None = None) -> list[bytes]:
    """Server-sent events, one ``data:`` line each (with ``event:`` lines when named)."""
    names = list(event_names) if event_names is not None else None
    out = []
    for i, event in enumerate(events):
        prefix = f"event: {names[i]}\n" if names is not None else ""
        data = event if isinstance(event, str) else json.dumps(event)
        out.append(f"{prefix}data: {data}\n\n".encode())
    return out


def split_text(text: str, pieces: int = 3) -> list[str]:
    """``text`` cut into about ``pieces`` parts (at least one, possibly empty)."""
    if not text:
        return []
    step = max(1, -(-len(text) // pieces))
    return [text[i : i + step] for i in range(0, len(text), step)]


class WireServer:
    """Base class: routing, the script queue, request recording and the HTTP plumbing.

    Subclasses implement :meth:`render_chat`, :meth:`render_error`, and optionally
    :meth:`render_embeddings`, :meth:`route` and :meth:`wants_stream`.
    """

    #: appended to ``http://127.0.0.1:<port>`` to form :attr:`base_url`
    base_path = ""

    def __init__(self) -> None:
        self._queue: deque[_Item] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._traffic = threading.Condition()
        self._arrived: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        self._gates: dict[str, tuple[int, float]] = {}
        #: the most requests of each kind ("chat", "embeddings") that were open at once
        self.peak_in_flight: dict[str, int] = {}

    # ------------------------------------------------------------------ script
    def reply(self, *replies: ScriptedReply | str) -> Self:
        """Queue chat replies (a plain string is a text reply)."""
        with self._lock:
            self._queue.extend(ScriptedReply(r) if isinstance(r, str) else r for r in replies)
        return self

    def fail(
        self, status: int, message: str = "error", headers: dict[str, str] | None = None
    ) -> Self:
        """Queue an error response in the provider's error format."""
        with self._lock:
            self._queue.append(_Failure(status, message, dict(headers or {})))
        return self

    def stall(self, seconds: float, then: ScriptedReply | str = "late") -> Self:
        """Queue a reply sent only after ``seconds`` (to trigger client timeouts)."""
        reply = ScriptedReply(then) if isinstance(then, str) else then
        with self._lock:
            self._queue.append(_Stall(seconds, reply))
        return self

    def cut(self, reply: ScriptedReply | str, keep: int = 2) -> Self:
        """Queue a streamed reply whose connection closes after its first ``keep`` chunks,
        before the provider's end marker (``[DONE]``, ``message_stop``, ``done``...)."""
        scripted = ScriptedReply(reply) if isinstance(reply, str) else reply
        with self._lock:
            self._queue.append(_Cut(scripted, keep))
        return self

    def raw(
        self,
        body: bytes | str | dict[str, Any],
        status: int = 200,
        content_type: str = "application/json",
    ) -> Self:
        """Queue an arbitrary response body (e.g. malformed tool-call arguments)."""
        data = (
            json.dumps(body).encode()
            if isinstance(body, dict)
            else (body.encode() if isinstance(body, str) else body)
        )
        with self._lock:
            self._queue.append(_Raw(WireResponse(status, data, content_type)))
        return self

    def hold(self, kind: str, until: int, timeout: float = 10.0) -> Self:
        """Hold every request of ``kind`` until ``until`` of them have arrived (or ``timeout``).

        A structural concurrency probe: clients that really overlap their requests are
        released together and :attr:`peak_in_flight` reaches ``until``; clients that send
        one request at a time wait out the timeout each and the peak stays at 1.
        """
        with self._traffic:
            self._gates[kind] = (until, timeout)
            self._arrived[kind] = 0  # count from now on
        return self

    def _enter(self, kind: str) -> None:
        with self._traffic:
            self._arrived[kind] = self._arrived.get(kind, 0) + 1
            open_now = self._in_flight.get(kind, 0) + 1
            self._in_flight[kind] = open_now
            self.peak_in_flight[kind] = max(self.peak_in_flight.get(kind, 0), open_now)
            self._traffic.notify_all()
            gate = self._gates.get(kind)
            if gate is not None:
                until, timeout = gate
                self._traffic.wait_for(lambda: self._arrived[kind] >= until, timeout)

    def _leave(self, kind: str) -> None:
        with self._traffic:
            self._in_flight[kind] -= 1

    # ------------------------------------------------------------------ provider hooks
    def route(self, method: str, path: str) -> str | None:
        """ "chat", "embeddings", or None (404) for a request line."""
        raise NotImplementedError

    def wants_stream(self, path: str, body: Any) -> bool:
        """Whether the request asks for a streamed response."""
        return bool(isinstance(body, dict) and body.get("stream"))

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        """The provider's response for one scripted reply."""
        raise NotImplementedError

    def render_embeddings(self, body: Any, path: str) -> WireResponse:
        """The provider's embeddings response (deterministic vectors)."""
        return WireResponse(404, b'{"error": "embeddings not supported"}')

    def render_error(self, status: int, message: str) -> bytes:
        """The provider's error body."""
        raise NotImplementedError

    # ------------------------------------------------------------------ dispatch
    def _next(self) -> _Item | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> WireResponse:
        """Record the request and build the response."""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(RecordedRequest(method, path, headers, body))
        kind = self.route(method, path)
        if kind is None:
            return WireResponse(404, self.render_error(404, f"no route for {method} {path}"))
        if kind == "embeddings":
            # Embeddings need no script, but a queued failure, stall or raw body applies.
            with self._lock:
                special = bool(self._queue) and not isinstance(self._queue[0], ScriptedReply)
            if not special:
                return self.render_embeddings(body, path)
        item = self._next()
        if item is None:
            return WireResponse(500, self.render_error(500, "the wire script has no reply left"))
        if isinstance(item, _Failure):
            return WireResponse(
                item.status, self.render_error(item.status, item.message), headers=item.headers
            )
        if isinstance(item, _Raw):
            return item.response
        if isinstance(item, _Cut):
            response = self.render_chat(item.reply, body, True)
            response.chunks = (response.chunks or [])[: item.keep]
            return response
        if isinstance(item, _Stall):
            response = (
                self.render_embeddings(body, path)
                if kind == "embeddings"
                else self.render_chat(item.then, body, self.wants_stream(path, body))
            )
            response.delay = item.seconds
            return response
        return self.render_chat(item, body, self.wants_stream(path, body))

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._httpd is None:
            raise InvalidStateError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL to give the SDK as its base URL."""
        return self.url + self.base_path

    def start(self) -> Self:
        """Listen on a free port of 127.0.0.1 in a background thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                kind = server.route(self.command, self.path) or "other"
                server._enter(kind)
                try:
                    self._reply(server.respond(self.command, self.path, headers, raw))
                finally:
                    server._leave(kind)

            def _reply(self, response: WireResponse) -> None:
                if response.delay:
                    time.sleep(response.delay)
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                try:
                    if response.chunks is None:
                        self.send_header("Content-Length", str(len(response.body)))
                        self.end_headers()
                        self.wfile.write(response.body)
                    else:
                        self.send_header("Connection", "close")
                        self.end_headers()
                        for chunk in response.chunks:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = _handle
            do_POST = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def chat_requests(self) -> Iterator[RecordedRequest]:
        """The recorded requests that were chat calls."""
        return (r for r in self.requests if self.route(r.method, r.path) == "chat")
