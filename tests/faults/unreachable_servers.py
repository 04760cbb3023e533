"""Local stand-ins for unreachable servers: no network, no unroutable addresses.

* :func:`closed_port` — a loopback port nothing listens on (connection refused);
* :data:`UNRESOLVABLE` — a host name that never resolves (``.invalid`` is reserved);
* :func:`silent_server` — accepts connections into its backlog and never answers (timeout);
* :func:`canned_server` — answers every connection with fixed bytes and hangs up: plain
  HTTP where TLS is expected (TLS failure), an HTTP 401, or a PostgreSQL error packet.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

UNRESOLVABLE = "nonexistent.invalid"
PLAIN_HTTP_400 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_UNAUTHORIZED_BODY = b'{"error": "Unauthorized", "detail": "invalid api key"}'
HTTP_401 = (
    b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_UNAUTHORIZED_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + _UNAUTHORIZED_BODY
)


def pg_auth_failure(user: str) -> bytes:
    """A PostgreSQL ErrorResponse: password authentication failed (SQLSTATE 28P01)."""
    fields = b"".join(
        code + text.encode() + b"\0"
        for code, text in (
            (b"S", "FATAL"),
            (b"V", "FATAL"),
            (b"C", "28P01"),
            (b"M", f'password authentication failed for user "{user}"'),
        )
    )
    body = fields + b"\0"
    return b"E" + struct.pack("!i", len(body) + 4) + body


def closed_port() -> int:
    """A loopback port that was free a moment ago: connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def silent_server() -> Iterator[int]:
    """A port whose connections are accepted by the kernel and never answered."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield int(s.getsockname()[1])


@contextmanager
def canned_server(answer: bytes) -> Iterator[int]:
    """A port that reads what a client sends, answers ``answer`` and closes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2.0)
                try:
                    conn.recv(65536)
                    conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        listener.close()
