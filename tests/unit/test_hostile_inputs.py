"""Issue 11's hostile inputs, one test each: what an attacker or a careless operator tries.

Each case must end in a typed error (a PyWrapAIError subclass, still the builtin the reference
promises) or a masked secret — never a raw third-party exception, a leaked secret or code run
from a file. Deeper tests of each area live beside the code they cover; this module is the
checklist.
"""

from __future__ import annotations

import io
import logging
import pickle
import sqlite3
import traceback
from pathlib import Path

import numpy as np
import pytest

from pywrapai import LLM
from pywrapai_graph import InMemoryVectorStore, QdrantVectorStore, SQLiteVectorStore
from pywrapai_graph.composition.cli import main
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import (
    AuthenticationError,
    IncompleteStreamError,
    InvalidArgumentError,
    InvalidStateError,
    PyWrapAIError,
    RateLimitError,
    ResponseFormatError,
    VectorStoreError,
)
from pywrapai_graph.testing.wire import OllamaWire, OpenAIWire

PW = "Hostile-pw-0123"


def shown(error: BaseException, caplog: pytest.LogCaptureFixture) -> str:
    with caplog.at_level(logging.ERROR):
        try:
            raise error
        except BaseException:
            logging.getLogger("hostile").exception("failed")
    return "".join(traceback.format_exception(error)) + caplog.text + str(error) + repr(error)


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue() + err.getvalue()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------------------- secrets
@pytest.mark.parametrize(
    "dsn",
    [
        f"host=127.0.0.1 port=1 password={PW} connect_timeout=2",
        f"postgresql://u@127.0.0.1:1/x?password={PW}&connect_timeout=2",
    ],
)
def test_pgvector_dsn_password_never_shown(dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    with pytest.raises(VectorStoreError) as info:
        PGVectorStore(dsn, dimension=4)
    assert PW not in shown(info.value, caplog)


def test_chroma_url_credentials_never_shown(
    here: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://admin:{PW}@127.0.0.1:1/?token={PW}"
    settings = load_settings({"store": {"backend": "chroma", "url": url}, "llm": {"base_url": url}})
    assert PW not in repr(settings)
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "chroma")
    monkeypatch.setenv("PYWRAPAI_STORE__URL", url)
    code, text = cli("store", "stats")
    assert code == 1
    assert PW not in text


def test_an_echoed_key_is_not_in_the_cause_chain(caplog: pytest.LogCaptureFixture) -> None:
    with OpenAIWire() as wire:
        wire.fail(401, f"bad key {PW}")
        llm = LLM(provider="openai", api_key=PW, base_url=wire.base_url, max_retries=0)
        with pytest.raises(AuthenticationError) as info:
            llm.chat("hi")
        llm.close()
    assert PW not in shown(info.value, caplog)


# ---------------------------------------------------------------------------- code from files
class _CreatesFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def test_a_planted_pickle_in_a_qdrant_folder_never_runs(here: Path) -> None:
    """A folder of an earlier release (qdrant-client's local mode, which unpickles points)
    is refused on open before anything in it is read."""
    from qdrant_client import QdrantClient, models

    folder, marker = here / "qdrant", here / "pwned"
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={})])
    client.close()
    with sqlite3.connect(folder / "collection" / "docs" / "storage.sqlite") as conn:
        conn.execute("UPDATE points SET point = ?", (pickle.dumps(_CreatesFile(marker)),))
    conn.close()
    code, text = cli("store", "stats")  # the default config is SQLite; open it directly too
    with pytest.raises(InvalidStateError, match="earlier release"):
        QdrantVectorStore("docs", location=str(folder))
    assert not marker.exists()
    assert code in (0, 1) and "Traceback" not in text


# ---------------------------------------------------------------------------- one error contract
def test_a_file_that_is_not_sqlite_is_a_store_error(here: Path) -> None:
    (here / "store.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(VectorStoreError):
        SQLiteVectorStore(str(here / "store.db"))


@pytest.mark.parametrize("body", ["<html>oops</html>", "", '{"unexpected": true}'])
def test_a_garbage_200_is_a_response_format_error(body: str) -> None:
    with OllamaWire() as wire:
        wire.raw(body)
        llm = LLM(provider="ollama", base_url=wire.url, max_retries=0)
        with pytest.raises(ResponseFormatError) as info:
            llm.chat("hi")
        llm.close()
    assert info.value.raw == body


def test_a_truncated_stream_is_an_error() -> None:
    with OpenAIWire() as wire:
        wire.cut("a long answer that is cut", keep=2)
        llm = LLM(provider="openai", api_key="k-0123", base_url=wire.base_url, max_retries=0)
        with pytest.raises(IncompleteStreamError):
            "".join(llm.stream("hi"))
        llm.close()


def test_ollama_honours_max_retries() -> None:
    with OllamaWire() as wire:
        wire.fail(429, "busy", headers={"retry-after": "0"})
        wire.reply("ok")
        llm = LLM(provider="ollama", base_url=wire.url, max_retries=1)
        assert llm.chat("hi").content == "ok"
        llm.close()
        wire.fail(429, "busy", headers={"retry-after": "4"})
        llm = LLM(provider="ollama", base_url=wire.url, max_retries=0)
        with pytest.raises(RateLimitError) as info:
            llm.chat("hi")
        llm.close()
    assert info.value.retry_after == 4.0


@pytest.mark.parametrize(
    ("config", "expected"),
    [(b"llm:\n  model: caf\xe9\n", 2), (None, 2)],
)
def test_cli_bad_config_is_one_line(here: Path, config: bytes | None, expected: int) -> None:
    if config is not None:
        (here / "c.yaml").write_bytes(config)
        code, text = cli("--config", "c.yaml", "store", "stats")
    else:
        code, text = cli("--config", "/dev/zero", "store", "stats")
    assert code == expected
    assert "Traceback" not in text and len(text.splitlines()) == 1


def test_cli_reports_an_unknown_variable(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYWRAPAI_BOGUS", "1")
    code, text = cli("store", "stats")
    assert code == 2 and "PYWRAPAI_BOGUS" in text


# ---------------------------------------------------------------------------- one behaviour
STORES = {
    "memory": lambda _p: InMemoryVectorStore(),
    "sqlite": lambda p: SQLiteVectorStore(str(p / "s.db")),
    "qdrant": lambda _p: QdrantVectorStore("docs", location=":memory:"),
}


@pytest.mark.parametrize("make", list(STORES.values()), ids=list(STORES))
def test_backends_agree_on_hostile_metadata_and_k(make: object, tmp_path: Path) -> None:
    store = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(InvalidArgumentError):
        store.add([Chunk("t", "d", {"when": object()}, id="x", embedding=[1.0, 0.0])])
    with pytest.raises(InvalidArgumentError):
        store.add([Chunk("bad \ud800 text", "d", {}, id="y", embedding=[1.0, 0.0])])
    store.add(
        [
            Chunk("a", "d", {"n": True, "a.b": "dot"}, id="1", embedding=[1.0, 0.0]),
            Chunk("b", "d", {"n": 1}, id="2", embedding=[0.0, 1.0]),
        ]
    )
    assert [h.chunk.id for h in store.search([1.0, 0.0], k=5, filter={"n": 1})] == ["2"]
    assert [h.chunk.id for h in store.search([1.0, 0.0], k=5, filter={"a.b": "dot"})] == ["1"]
    assert len(store.search([1.0, 0.0], k=np.int64(2**40))) == 2
    assert len(store.search([1.0, 0.0], k=2**63)) == 2


@pytest.mark.parametrize("name", ["t\n", "t;drop", "", "t t"])
def test_identifier_checks_match_the_whole_name(name: str, tmp_path: Path) -> None:
    with pytest.raises(PyWrapAIError):
        SQLiteVectorStore(str(tmp_path / "s.db"), table_name=name)
