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

Instead of one queued reply per call, a *responder* computes each reply from the request
(queued replies, failures and stalls still come first)::

    def echo(request: RecordedRequest) -> str:
        return request.json["messages"][-1]["content"]

    with OpenAIWire(responder=echo, pace=0.05) as wire:  # streams: 50 ms between events
        ...

The server keeps the last ``max_requests`` requests (oldest dropped, counted in
:attr:`WireServer.requests_dropped`) and listens with a backlog of ``backlog`` connections,
so a load test's many clients connect without retries.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.errors import InvalidArgumentError, InvalidStateError
from pywrapai_graph.testing.scripted import ScriptedReply

__all__ = ["RecordedRequest", "Responder", "WireResponse", "WireServer"]

#: Requests a server keeps by default (the oldest are dropped beyond it).
DEFAULT_MAX_REQUESTS = 10_000
#: Connections the kernel queues for the server while it accepts others.
DEFAULT_BACKLOG = 128


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
    #: seconds between two stream chunks (paced streaming)
    pace: float = 0.0


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
#: Computes the chat reply to one request (a plain string is a text reply).
Responder = Callable[[RecordedRequest], ScriptedReply | str]


def _non_negative(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")
    return float(value)


def _positive_int(name: str, value: object) -> int:
    if not isinstance(value, int) or not is_positive_int(value):
        raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
    return value


def sse(events: Iterable[Any], *, event_names: Iterable[str] | None = None) -> list[bytes]:
    """Server-sent events, one ``data:`` line each (with ``event:`` lines when named)."""
    names = list(event_names) if event_names is not None else None
    out = []
    for i, event in enumerate(events):
        prefix = f"event: {names[i]}\n" if names is not None else ""
        data = event if isinstance(event, str) else json.dumps(event)
        out.append(f"{prefix}data: {data}\n\n".encode())
    return out


class WireServer:
    """Base class: routing, the script queue, request recording and the HTTP plumbing.

    Subclasses implement :meth:`render_chat`, :meth:`render_error`, :attr:`routes` (or
    :meth:`route`), and optionally :meth:`render_embeddings` (or :meth:`render_computed`)
    and :meth:`wants_stream`.
    """

    #: appended to ``http://127.0.0.1:<port>`` to form :attr:`base_url`
    base_path = ""
    #: the request kinds answered from the request alone, with no script (a queued failure,
    #: stall or raw body still applies first): see :meth:`render_computed`
    computed_kinds: ClassVar[tuple[str, ...]] = ("embeddings",)
    #: POST path prefix -> the kind of request it is, for the default :meth:`route`
    routes: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        max_requests: int = DEFAULT_MAX_REQUESTS,
        backlog: int = DEFAULT_BACKLOG,
        pace: float = 0.0,
    ) -> None:
        """
        Args:
            responder: computes a chat reply from each request when nothing is queued.
            max_requests: how many requests :attr:`requests` keeps (the oldest are dropped).
            backlog: the listen backlog (connections the kernel queues before an accept).
            pace: seconds between the events of every streamed reply.

        Raises:
            InvalidArgumentError: a negative ``pace`` or a ``max_requests``/``backlog`` < 1.
        """
        self._queue: deque[_Item] = deque()
        self._lock = threading.Lock()
        self._responder = responder
        self._backlog = _positive_int("backlog", backlog)
        self._pace = _non_negative("pace", pace)
        #: the last ``max_requests`` requests received, oldest first (a plain list)
        self.requests: list[RecordedRequest] = []
        self.max_requests = _positive_int("max_requests", max_requests)
        #: how many requests fell out of :attr:`requests` (beyond ``max_requests``)
        self.requests_dropped = 0
        #: stream chunks written to clients so far (all streams)
        self.chunks_sent = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._traffic = threading.Condition()
        self._arrived: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        self._gates: dict[str, tuple[int, float]] = {}
        #: the most requests of each kind ("chat", "embeddings") that were open at once
        self.peak_in_flight: dict[str, int] = {}
        #: the most requests of any kinds that were open at once
        self.peak_in_flight_total = 0

    # ------------------------------------------------------------------ script
    def reply(self, *replies: ScriptedReply | str) -> Self:
        """Queue chat replies (a plain string is a text reply)."""
        with self._lock:
            self._queue.extend(ScriptedReply(r) if isinstance(r, str) else r for r in replies)
        return self

    def respond_with(self, responder: Responder | None) -> Self:
        """Compute each chat reply from its request with ``responder`` (None: stop) whenever
        no queued reply, failure or stall is waiting."""
        with self._lock:
            self._responder = responder
        return self

    def pace(self, seconds: float) -> Self:
        """Wait ``seconds`` between the events of every streamed reply from now on."""
        self._pace = _non_negative("pace", seconds)
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
            total = sum(self._in_flight.values())
            self.peak_in_flight_total = max(self.peak_in_flight_total, total)
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
        """ "chat", "embeddings", or None (404) for a request line: by default the kind of
        the first of :attr:`routes` that begins a POST's path."""
        if method != "POST":
            return None
        return next((kind for start, kind in self.routes.items() if path.startswith(start)), None)

    def wants_stream(self, path: str, body: Any) -> bool:
        """Whether the request asks for a streamed response."""
        return bool(isinstance(body, dict) and body.get("stream"))

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        """The provider's response for one scripted reply."""
        raise NotImplementedError

    def render_embeddings(self, body: Any, path: str) -> WireResponse:
        """The provider's embeddings response (deterministic vectors)."""
        return WireResponse(404, b'{"error": "embeddings not supported"}')

    def render_computed(self, kind: str, body: Any, path: str) -> WireResponse:
        """The response to a request of one of :attr:`computed_kinds`."""
        return self.render_embeddings(body, path)

    def render_error(self, status: int, message: str) -> bytes:
        """The provider's error body."""
        raise NotImplementedError

    def refuse(self, request: RecordedRequest, raw: bytes) -> WireResponse | None:
        """The error response to a request the provider would refuse before reading it (no
        credential, a bad signature, a missing required parameter); None serves it."""
        return None

    # ------------------------------------------------------------------ dispatch
    def _next(self, request: RecordedRequest) -> _Item | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        if responder is None:
            return None
        reply = responder(request)
        return ScriptedReply(reply) if isinstance(reply, str) else reply

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if len(self.requests) > self.max_requests:
                del self.requests[0]  # a memmove of pointers, even at the default maximum
                self.requests_dropped += 1

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> WireResponse:
        """Record the request and build the response."""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        request = RecordedRequest(method, path, headers, body)
        self._record(request)
        refused = self.refuse(request, raw)
        if refused is not None:
            return refused
        kind = self.route(method, path)
        if kind is None:
            return WireResponse(404, self.render_error(404, f"no route for {method} {path}"))
        if kind in self.computed_kinds:
            # Embeddings need no script, but a queued failure, stall or raw body applies.
            with self._lock:
                special = bool(self._queue) and not isinstance(self._queue[0], ScriptedReply)
            if not special:
                return self.render_computed(kind, body, path)
        item = self._next(request)
        if item is None:
            return WireResponse(500, self.render_error(500, "the wire script has no reply left"))
        return self._scripted(item, kind, body, path)

    def _scripted(self, item: Any, kind: str, body: Any, path: str) -> WireResponse:
        """The response a script item (reply, failure, raw body, cut or stall) stands for."""
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
                self.render_computed(kind, body, path)
                if kind in self.computed_kinds
                else self.render_chat(item.then, body, self.wants_stream(path, body))
            )
            response.delay = item.seconds
            return response
        return self.render_chat(item, body, self.wants_stream(path, body))

    def _paced(self, response: WireResponse) -> WireResponse:
        if response.chunks is not None and not response.pace:
            response.pace = self._pace
        return response

    def _sent(self) -> None:
        with self._lock:
            self.chunks_sent += 1

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
                    response = server.respond(self.command, self.path, headers, raw)
                    self._reply(server._paced(response))
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
                        for i, chunk in enumerate(response.chunks):
                            if i and response.pace:
                                time.sleep(response.pace)
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            server._sent()
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = _handle
            do_POST = _handle

        class Listener(ThreadingHTTPServer):
            request_queue_size = server._backlog  # socketserver passes it to listen()
            daemon_threads = True

        self._httpd = Listener(("127.0.0.1", 0), Handler)
        self._serve()
        return self

    def _serve(self) -> None:
        assert self._httpd is not None
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def accepting_paused(self) -> Iterator[None]:
        """Accept no connection inside the block: new ones wait in the listen backlog, as
        with a server too busy to accept (requests already open carry on)."""
        if self._httpd is None:
            raise InvalidStateError("the server is not started")
        self._httpd.shutdown()
        try:
            yield
        finally:
            self._serve()

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
