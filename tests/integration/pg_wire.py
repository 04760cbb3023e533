"""A TCP proxy in front of PostgreSQL that lists the statements its clients send.

It reads the frontend side of the wire protocol: after the untyped startup messages every
message is a type byte and a length, and a simple-protocol statement is a ``Q`` message
(psycopg2 sends every ``execute`` as one). Bytes are forwarded unchanged both ways.
"""

from __future__ import annotations

import socket
import struct
import threading
from urllib.parse import urlparse

_SSL_OR_GSS = (80877103, 80877104)  # SSLRequest / GSSENCRequest: another untyped one follows


class StatementCounter:
    """Listens on 127.0.0.1; :attr:`statements` holds each ``Q`` message's SQL text and
    :attr:`messages` the type byte of every typed frontend message (``Q``, and ``P``/``B``/
    ``E``/``S`` of the extended protocol, ``X``...)."""

    def __init__(self, upstream_url: str) -> None:
        target = urlparse(upstream_url)
        self._upstream = (target.hostname or "127.0.0.1", target.port or 5432)
        self._url = upstream_url
        self.statements: list[str] = []
        self.messages: list[str] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def start(self) -> str:
        """The upstream URL with this proxy's port (SSL off, so the wire is readable)."""
        self._thread.start()
        port = self._listener.getsockname()[1]
        target = urlparse(self._url)
        netloc = f"{target.username}@127.0.0.1:{port}" if target.username else f"127.0.0.1:{port}"
        return target._replace(netloc=netloc, query="sslmode=disable&gssencmode=disable").geturl()

    def take(self) -> list[str]:
        """The statements seen since the last call."""
        with self._lock:
            seen, self.statements = self.statements, []
        return seen

    def take_messages(self) -> list[str]:
        """The type bytes of the messages seen since the last call."""
        with self._lock:
            seen, self.messages = self.messages, []
        return seen

    def stop(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()
            threading.Thread(target=self._read_client, args=(client, server), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                s.close()

    def _read_client(self, client: socket.socket, server: socket.socket) -> None:
        buffer = b""
        untyped = True
        try:
            while data := client.recv(65536):
                buffer += data  # counted before it is passed on: the reply cannot come first
                buffer, untyped = self._parse(buffer, untyped)
                server.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, server):
                s.close()

    def _parse(self, buffer: bytes, untyped: bool) -> tuple[bytes, bool]:
        while True:
            if untyped:
                if len(buffer) < 8:
                    return buffer, True
                (length,) = struct.unpack("!i", buffer[:4])
                (code,) = struct.unpack("!i", buffer[4:8])
                if len(buffer) < length:
                    return buffer, True
                buffer, untyped = buffer[length:], code in _SSL_OR_GSS
                continue
            if len(buffer) < 5:
                return buffer, False
            kind = buffer[:1]
            (length,) = struct.unpack("!i", buffer[1:5])
            if len(buffer) < 1 + length:
                return buffer, False
            with self._lock:
                self.messages.append(kind.decode())
                if kind == b"Q":
                    self.statements.append(buffer[5 : 1 + length].rstrip(b"\0").decode())
            buffer = buffer[1 + length :]
