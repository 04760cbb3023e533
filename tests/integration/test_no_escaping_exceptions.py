"""No third-party exception escapes: a fault matrix over every store and provider.

Each case drives real engines, drivers and SDKs into their own failures (a file that is not
a database, a corrupted page, a tampered index, a role without rights, a server that answers
500 or closes mid-reply, bad configuration, lone surrogates) and then calls every public
method, sync and async. Whatever each call raises must be a ``PyWrapAIError``; where the
underlying error could carry a secret (database, server and provider errors), no
third-party exception may stay in the visible ``__cause__`` chain (only our redacted copy).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import (
    ChromaVectorStore,
    FAISSVectorStore,
    PGVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.errors import PyWrapAIError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.redaction import RedactedError
from pywrapai_graph.testing.contracts.vector_store import (
    document_chunks,
    make_chunks,
    manifest_for,
)

DIM = 8


@dataclass
class Outcome:
    """What the calls of one case did: which raised ours, which let something else out."""

    ours: list[str] = field(default_factory=list)
    escaped: list[str] = field(default_factory=list)
    leaky_causes: list[str] = field(default_factory=list)

    def record(self, name: str, exc: BaseException, *, secrets_possible: bool) -> None:
        if not isinstance(exc, PyWrapAIError):
            self.escaped.append(f"{name}: {type(exc).__module__}.{type(exc).__name__}: {exc}")
            return
        self.ours.append(name)
        if secrets_possible:
            cause = exc.__cause__
            while cause is not None:
                if not isinstance(cause, PyWrapAIError | RedactedError):
                    self.leaky_causes.append(f"{name}: cause {type(cause).__name__}")
                cause = cause.__cause__

    def run(self, name: str, call: Callable[[], Any], *, secrets_possible: bool) -> None:
        try:
            result = call()
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        except Exception as exc:
            self.record(name, exc, secrets_possible=secrets_possible)

    def check(self) -> None:
        assert self.escaped == [], "third-party exceptions escaped:\n" + "\n".join(self.escaped)
        assert self.leaky_causes == [], "raw causes kept:\n" + "\n".join(self.leaky_causes)
        assert self.ours, "the fault was never reached: no call failed"


def _calls(store: BaseVectorStore) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Every public method of the store, sync then async."""
    chunks = make_chunks(4, DIM, seed=11, prefix="new")
    doc = document_chunks("doc-x", 2, DIM, "v1")
    manifest = manifest_for("doc-x", doc, DIM)
    query = [1.0] * DIM
    yield "add", lambda: store.add(chunks)
    yield "search", lambda: store.search(query, k=3)
    yield "search(filter)", lambda: store.search(query, k=3, filter={"parity": "even"})
    yield "lexical_search", lambda: store.lexical_search("alpha beta", k=3)
    yield "count", store.count
    yield "count(filter)", lambda: store.count({"parity": "even"})
    yield "len", lambda: len(store)
    yield "dimension", lambda: store.dimension
    yield "delete", lambda: store.delete(["c0", "new1"])
    yield "delete_by_doc", lambda: store.delete_by_doc("doc-0")
    yield "replace_document", lambda: store.replace_document(manifest, doc)
    yield "document_manifest", lambda: store.document_manifest("doc-x")
    yield "embedder_identity", store.embedder_identity
    yield "aadd", lambda: store.aadd(chunks)
    yield "asearch", lambda: store.asearch(query, k=3, filter={"parity": "odd"})
    yield "acount", lambda: store.acount({"parity": "odd"})
    yield "adelete", lambda: store.adelete(["c1"])
    yield "adelete_by_doc", lambda: store.adelete_by_doc("doc-x")
    yield "areplace_document", lambda: store.areplace_document(manifest, doc)
    yield "clear", store.clear
    yield "aclear", store.aclear
    yield "close", store.close
    yield "aclose", store.aclose


def drive(open_store: Callable[[], BaseVectorStore], *, secrets_possible: bool = False) -> None:
    """Open the store, call everything; every failure must be ours."""
    outcome = Outcome()
    store: BaseVectorStore | None = None

    def opening() -> None:
        nonlocal store
        store = open_store()

    outcome.run("open", opening, secrets_possible=secrets_possible)
    if store is not None:
        for name, call in _calls(store):
            outcome.run(name, call, secrets_possible=secrets_possible)
    outcome.check()


# ---------------------------------------------------------------------------- SQLite
def _filled_sqlite(path: Path, n: int = 400) -> None:
    store = SQLiteVectorStore(path)
    store.add(make_chunks(n, DIM, docs=4))
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_sqlite_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.write_bytes(b"this is a text file, not SQLite\n" * 200)
    drive(lambda: SQLiteVectorStore(path))


def test_sqlite_a_corrupted_page(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _filled_sqlite(path)
    data = bytearray(path.read_bytes())
    page = 4096
    for start in range(page * 2, len(data), page * 3):  # scribble over every third page
        data[start : start + 200] = b"\xff" * 200
    path.write_bytes(bytes(data))
    drive(lambda: SQLiteVectorStore(path))


def test_sqlite_a_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _filled_sqlite(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    drive(lambda: SQLiteVectorStore(path))


def test_sqlite_a_read_only_file(tmp_path: Path) -> None:
    """The file is immutable (``chattr +i``: read-only even for root, as tests run here)."""
    import subprocess

    path = tmp_path / "store.db"
    _filled_sqlite(path)
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], check=False).returncode:
        pytest.skip("cannot make a file immutable here (chattr +i needs CAP_LINUX_IMMUTABLE)")
    try:
        drive(lambda: SQLiteVectorStore(path))
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def test_sqlite_metadata_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _filled_sqlite(path, n=20)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE vector_chunks SET metadata = '{not json' ")
        conn.execute("UPDATE vector_chunks SET embedding = x'00ff' WHERE id = 'c3'")
    conn.close()
    drive(lambda: SQLiteVectorStore(path))


# ---------------------------------------------------------------------------- FAISS
def _filled_faiss(tmp_path: Path) -> tuple[Path, Path]:
    index, meta = tmp_path / "docs.faiss", tmp_path / "docs.db"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(50, DIM, docs=4))
    store.close()
    return index, meta


@pytest.mark.parametrize("forged", ["another-dimension", "text", "truncated"])
def test_faiss_a_forged_vector(tmp_path: Path, forged: str) -> None:
    """A row's vector changed outside the library: the store's own check refuses it."""
    index, meta = _filled_faiss(tmp_path)
    vector = {
        "another-dimension": np.ones(DIM * 2, dtype="<f4").tobytes(),
        "text": "garbage",
        "truncated": b"\x07" * 5,
    }[forged]
    with sqlite3.connect(meta) as conn:
        conn.execute("UPDATE chunks SET vector = ? WHERE id = 'c7'", (vector,))
    conn.close()
    drive(lambda: FAISSVectorStore(index, meta))


def test_faiss_a_garbage_file(tmp_path: Path) -> None:
    index, meta = _filled_faiss(tmp_path)
    meta.write_bytes(meta.read_bytes()[:100] + b"garbage" * 3000)
    drive(lambda: FAISSVectorStore(index, meta))


def test_faiss_a_store_locked_by_another_writer(tmp_path: Path) -> None:
    import fcntl
    import os

    index, meta = _filled_faiss(tmp_path)
    fd = os.open(f"{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another writer holds the store's lock
    try:
        drive(lambda: FAISSVectorStore(index, meta, lock_timeout=0.05))
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def test_faiss_a_sidecar_that_is_not_a_database(tmp_path: Path) -> None:
    index, meta = _filled_faiss(tmp_path)
    meta.write_bytes(b"not sqlite at all" * 300)
    drive(lambda: FAISSVectorStore(index, meta))


# ---------------------------------------------------------------------------- Qdrant folder
def _filled_qdrant(folder: Path) -> None:
    store = QdrantVectorStore("docs", location=str(folder))
    store.add(make_chunks(20, DIM, docs=4))
    store.close()


@pytest.mark.parametrize("name", ["page_0.dat", "segment.json", "edge_config.json"])
def test_qdrant_folder_a_corrupted_storage_file(tmp_path: Path, name: str) -> None:
    """Payload pages make the engine panic (pyo3's ``PanicException``, a ``BaseException``)."""
    folder = tmp_path / "qdrant"
    _filled_qdrant(folder)
    for storage in folder.rglob(name):
        data = bytearray(storage.read_bytes())
        data[20:400] = b"\x00" * len(data[20:400])
        storage.write_bytes(bytes(data))
    drive(lambda: QdrantVectorStore("docs", location=str(folder)))


def test_qdrant_folder_of_an_earlier_release_with_a_record_that_is_not_json(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "qdrant"
    (folder / "collection").mkdir(parents=True)
    (folder / "pywrapai-integrity.json").write_text("{ not json", encoding="utf-8")
    drive(lambda: QdrantVectorStore("docs", location=str(folder)))


# ---------------------------------------------------------------------------- pgvector
@pytest.fixture
def role_without_rights(pg_url: str) -> Iterator[tuple[str, str]]:
    import psycopg2

    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    table = f"fault_{uuid.uuid4().hex[:10]}"
    role = f"nobody_{uuid.uuid4().hex[:8]}"
    owner = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    owner.add(make_chunks(10, DIM, docs=2))
    owner.close()
    with admin.cursor() as cur:
        cur.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pg-SECRET-pw'")
    # the password travels in the DSN: it must never show in an error or a cause
    yield table, pg_url.replace("postgres@", f"{role}:pg-SECRET-pw@", 1)
    with admin.cursor() as cur:
        cur.execute(f"DROP OWNED BY {role}")
        cur.execute(f"DROP ROLE {role}")
        cur.execute(
            f'DROP TABLE IF EXISTS "{table}", "{table}__docs", "{table}__info", "{table}__terms", '
            f'"{table}__doclen", "{table}__bm25" CASCADE'
        )
    admin.close()


def test_pgvector_a_role_without_rights(role_without_rights: tuple[str, str]) -> None:
    table, dsn = role_without_rights
    drive(
        lambda: PGVectorStore(dsn, table_name=table, dimension=DIM, create_schema=False),
        secrets_possible=True,
    )


def test_pgvector_a_role_without_rights_creating_its_schema(
    role_without_rights: tuple[str, str],
) -> None:
    _, dsn = role_without_rights
    drive(lambda: PGVectorStore(dsn, table_name="fault_new", dimension=DIM), secrets_possible=True)


# ---------------------------------------------------------------------------- servers
class _Answer(BaseHTTPRequestHandler):
    """Answers every request with the server's canned reply."""

    reply: Callable[[BaseHTTPRequestHandler], None]

    def _any(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        type(self).reply(self)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def broken_server() -> Iterator[Callable[[str], str]]:
    """``serve(kind)``: a local HTTP server that fails every request in one way:
    ``"500"`` (an error document), ``"garbage"`` (a 200 that is not JSON), ``"cut"``
    (headers promising a body, then the connection closes mid-reply)."""
    servers: list[ThreadingHTTPServer] = []

    def serve(kind: str) -> str:
        def reply(handler: BaseHTTPRequestHandler) -> None:
            if kind == "500":
                body = json.dumps({"error": "InternalError", "message": "boom"}).encode()
                handler.send_response(500)
            elif kind == "garbage":
                body = b"<html>not json</html>"
                handler.send_response(200)
            else:
                handler.send_response(200)
                handler.send_header("content-type", "application/json")
                handler.send_header("content-length", "5000")
                handler.end_headers()
                handler.wfile.write(b'{"partial": ')
                handler.wfile.flush()
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
                return
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

        handler = type("Handler", (_Answer,), {"reply": staticmethod(reply)})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_chroma_unreachable() -> None:
    drive(
        lambda: ChromaVectorStore(url="http://admin:chroma-SECRET@127.0.0.1:1"),
        secrets_possible=True,
    )


@pytest.mark.parametrize("kind", ["500", "garbage", "cut"])
def test_chroma_a_server_that_fails(broken_server: Callable[[str], str], kind: str) -> None:
    url = broken_server(kind).replace("http://", "http://admin:chroma-SECRET@")
    drive(lambda: ChromaVectorStore(url=url, timeout=5.0), secrets_possible=True)


@pytest.mark.parametrize("kind", ["500", "garbage", "cut"])
def test_qdrant_a_server_that_fails(broken_server: Callable[[str], str], kind: str) -> None:
    url = broken_server(kind)
    drive(
        lambda: QdrantVectorStore("docs", url=url, dimension=DIM, timeout=5),
        secrets_possible=True,
    )


# ---------------------------------------------------------------------------- providers
CHAT = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-haiku-4-5-20251001",
    "gemini": "gemini-2.5-flash",
    "ollama": "llama3.2",
}
EMBED = {"openai": "text-embedding-3-small", "gemini": "gemini-embedding-001", "ollama": "nomic"}
KEY = "sk-test-SECRETSECRETSECRET0123"


def _options(provider: str, url: str) -> dict[str, Any]:
    options: dict[str, Any] = {"base_url": url, "timeout": 5.0, "max_retries": 0}
    if provider != "ollama":
        options["api_key"] = KEY
    return options


def _provider_calls(provider: str, url: str, text: str) -> Iterator[tuple[str, Callable[[], Any]]]:
    from pywrapai import LLM, Embedder

    llm = LLM(provider=provider, model=CHAT[provider], **_options(provider, url))

    async def astream() -> str:
        try:
            return "".join([piece async for piece in llm.astream(text)])
        finally:
            await llm.aclose()

    async def achat() -> Any:
        try:
            return await llm.achat(text)
        finally:
            await llm.aclose()

    yield "chat", lambda: llm.chat(text)
    yield "stream", lambda: "".join(llm.stream(text))
    yield "achat", achat
    yield "astream", astream
    if provider in EMBED:
        options = _options(provider, url)
        if provider == "ollama":
            del options["max_retries"]  # the Ollama embedder takes no retry setting
        embedder = Embedder(provider=provider, model=EMBED[provider], **options)
        yield "embed", lambda: embedder.embed([text, "second"])
        yield "aembed", lambda: embedder.aembed([text])


@pytest.mark.parametrize("provider", list(CHAT))
@pytest.mark.parametrize("kind", ["500", "garbage", "cut"])
def test_a_provider_server_that_fails(
    broken_server: Callable[[str], str], provider: str, kind: str
) -> None:
    """500 with an error document, a 200 that is not JSON, and a reply whose connection
    closes mid-body (httpx RemoteProtocolError / aiohttp payload errors)."""
    url = broken_server(kind)
    if provider == "openai":
        url += "/v1"
    outcome = Outcome()
    for name, call in _provider_calls(provider, url, "Hi"):
        outcome.run(name, call, secrets_possible=True)
    outcome.check()


@pytest.mark.parametrize("provider", list(CHAT))
def test_a_provider_that_is_unreachable(provider: str) -> None:
    outcome = Outcome()
    for name, call in _provider_calls(provider, "http://127.0.0.1:1", "Hi"):
        outcome.run(name, call, secrets_possible=True)
    outcome.check()


@pytest.mark.parametrize("provider", list(CHAT))
def test_lone_surrogates_in_a_prompt(provider: str) -> None:
    """A prompt holding a lone surrogate (it cannot be encoded as UTF-8) is refused as ours,
    or sent escaped; it never raises UnicodeEncodeError."""
    from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire

    wires = {"openai": OpenAIWire, "anthropic": AnthropicWire, "gemini": GeminiWire}
    wire = wires.get(provider, OllamaWire)()
    with wire:
        for _ in range(8):
            wire.reply("fine")
        url = wire.base_url if provider == "openai" else wire.url
        outcome = Outcome()
        for name, call in _provider_calls(provider, url, "broken \ud800 text"):
            outcome.run(name, call, secrets_possible=True)
        assert outcome.escaped == [], "\n".join(outcome.escaped)
        assert outcome.leaky_causes == [], "\n".join(outcome.leaky_causes)


# ---------------------------------------------------------------------------- configuration
BAD_CONFIGS: list[Any] = [
    {"store": {"backend": "sqlite", "path": 5, "table_name": ["t"]}},
    {"llm": {"provider": "openai", "timeout": "soon", "max_retries": -1}},
    {"retriever": {"k": "many"}},
    {"store": "not a mapping"},
    {"chunker": {"chunk_size": 10, "chunk_overlap": 50}},
    {"nonsense": True},
    {"store": {"backend": "faiss", "dimension": 1.5}},
]


@pytest.mark.parametrize("config", BAD_CONFIGS, ids=repr)
def test_bad_configuration_values(config: Any) -> None:
    from pywrapai_graph.composition.container import build_container
    from pywrapai_graph.composition.settings import load_settings

    outcome = Outcome()
    outcome.run("load_settings", lambda: load_settings(config), secrets_possible=True)
    outcome.run("build_container", lambda: build_container(config), secrets_possible=True)
    outcome.check()


@pytest.mark.parametrize(
    ("text", "variables"),
    [
        ("store: [unclosed\n", {}),
        ("store:\n  backend: sqlite\n  path: !!python/object:os.system ls\n", {}),
        (b"\xff\xfe not utf-8", {}),
        ("llm:\n  provider: openai\n", {"PYWRAPAI_STORE": "{not json"}),
        ("{}", {"PYWRAPAI_STORE__DIMENSION": "eight"}),
    ],
    ids=["bad-yaml", "python-tag", "not-utf8", "env-bad-json", "env-bad-value"],
)
def test_bad_configuration_files_and_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | bytes, variables: dict[str, str]
) -> None:
    from pywrapai_graph.composition.container import build_container

    path = tmp_path / "pywrapai.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    outcome = Outcome()
    outcome.run("build_container", lambda: build_container(str(path)), secrets_possible=True)
    outcome.check()
