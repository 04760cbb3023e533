"""Every "cannot reach" path names the host and port, the reason and what to check — never a secret.

Seven targets (the four providers through their SDKs, Qdrant and Chroma servers, PostgreSQL)
times five reasons, each made locally (tests/faults/unreachable_servers.py): an unresolvable
``.invalid`` host (DNS), a closed loopback port (refused), a socket that accepts and never
answers (timeout), a plain-TCP server where TLS is expected, and a server that answers 401
(or PostgreSQL's "password authentication failed").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from pywrapai_graph import LLM, ChromaVectorStore, PGVectorStore, QdrantVectorStore
from pywrapai_graph.errors import PyWrapAIError
from tests.faults.unreachable_servers import (
    HTTP_401,
    PLAIN_HTTP_400,
    UNRESOLVABLE,
    canned_server,
    closed_port,
    pg_auth_failure,
    silent_server,
)

API_KEY = "sk-unreachable-secret-0123456789"
PASSWORD = "pw-unreachable-9876"
PHRASES = {
    "dns": "the host name does not resolve (DNS)",
    "refused": "the connection was refused",
    "timeout": "timed out",
    "tls": "the TLS handshake failed",
    "auth": "rejected the credentials",
}


@dataclass(frozen=True)
class Server:
    scheme: str  # "http" or "https"
    host: str
    port: int

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def url(self, path: str = "") -> str:
        return f"{self.scheme}://app:{PASSWORD}@{self.host}:{self.port}{path}"


@contextmanager
def scenario(reason: str, target: str) -> Iterator[Server]:
    """A server that fails in the way ``reason`` says."""
    if reason == "dns":
        yield Server("http", UNRESOLVABLE, 8080)
    elif reason == "refused":
        yield Server("http", "127.0.0.1", closed_port())
    elif reason == "timeout":
        with silent_server() as port:
            yield Server("http", "127.0.0.1", port)
    elif reason == "tls":
        with canned_server(PLAIN_HTTP_400) as port:
            yield Server("https", "127.0.0.1", port)
    else:
        answer = pg_auth_failure("app") if target == "postgresql" else HTTP_401
        with canned_server(answer) as port:
            yield Server("http", "127.0.0.1", port)


def _provider(name: str, path: str = "") -> Callable[[Server], object]:
    def call(server: Server) -> object:
        llm = LLM(
            provider=name,
            model="m",
            api_key=API_KEY,
            base_url=server.url(path),
            timeout=0.5,
            max_retries=0,
        )
        try:
            return llm.chat("Hello?")
        finally:
            llm.close()

    return call


def _postgresql(server: Server) -> object:
    sslmode = "require" if server.scheme == "https" else "disable"
    dsn = (
        f"postgresql://app:{PASSWORD}@{server.host}:{server.port}/rag"
        f"?connect_timeout=1&sslmode={sslmode}"
    )
    return PGVectorStore(dsn, dimension=3)


def _qdrant(server: Server) -> object:
    return QdrantVectorStore("docs", url=server.url(), api_key=API_KEY, timeout=1)


def _chroma(server: Server) -> object:
    return ChromaVectorStore(url=server.url(), timeout=0.5)


TARGETS: dict[str, Callable[[Server], object]] = {
    "openai": _provider("openai", "/v1"),
    "anthropic": _provider("anthropic"),
    "gemini": _provider("gemini"),
    "ollama": _provider("ollama"),
    "qdrant": _qdrant,
    "chroma": _chroma,
    "postgresql": _postgresql,
}


def chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
@pytest.mark.parametrize("reason", list(PHRASES))
@pytest.mark.parametrize("target", list(TARGETS))
def test_cannot_reach_names_host_reason_and_next_step_without_secrets(
    target: str, reason: str
) -> None:
    with scenario(reason, target) as server, pytest.raises(PyWrapAIError) as info:
        TARGETS[target](server)
    message = str(info.value)
    assert server.where in message, message
    assert PHRASES[reason] in message, message
    assert "Check" in message or "check" in message, message  # says what to check
    for error in chain(info.value):
        for shown in (str(error), repr(error)):
            assert API_KEY not in shown, shown
            assert PASSWORD not in shown, shown
