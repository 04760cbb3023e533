"""Secrets never reach messages, reprs, CLI output or exception chains."""

from __future__ import annotations

import io
import logging
import traceback
from pathlib import Path

import pytest

from pywrapai_graph.composition.cli import main
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import PyWrapAIError, VectorStoreError
from pywrapai_graph.redaction import RedactedError, redact, scrubbed

PW = "Hunter2-pw"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"postgresql://user:{PW}@db:5432/app", "postgresql://user:***@db:5432/app"),
        (f"postgres://user:{PW}@x@db/app", "postgres://user:***@db/app"),  # '@' in the password
        (f"postgresql://user@db/app?password={PW}&sslmode=require", "sslmode=require"),
        (
            f"host=db port=5432 password={PW} dbname=app",
            "host=db port=5432 password=*** dbname=app",
        ),
        (f"host=db password = '{PW} with \\' quote' user=u", "password = '***' user=u"),
        (f"http://admin:{PW}@chroma:8000", "http://admin:***@chroma:8000"),
        (f"https://chroma:8000/?token={PW}", "https://chroma:8000/?token=***"),
        (f"https://x/v1?api_key={PW}&x=1", "https://x/v1?api_key=***&x=1"),
        (f"https://x/v1?key={PW}", "https://x/v1?key=***"),
        (f"Authorization: Bearer {PW}", "Authorization: ***"),
        (f'{{"api_key": "{PW}"}}', '{"api_key": "***"}'),
        (f"x-api-key: {PW}", "x-api-key: ***"),
        ("key sk-proj-abcdefghijkl and AIzaSyA1234567890abc", "key *** and ***"),
    ],
)
def test_redact_masks_every_form(text: str, kept: str) -> None:
    out = redact(text)
    assert PW not in out
    assert "Hunter2" not in out
    assert kept in out


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "max_tokens=5, k=3, table 'docs', http://localhost:8000/api/v1 tokens: 12"
    assert redact(text) == text


def test_known_secrets_are_masked_also_percent_encoded() -> None:
    secret = "p@ss word/1"
    assert redact(f"a {secret} b p%40ss%20word%2F1 c", [secret]) == "a *** b *** c"
    assert redact("short", ["ab", None, ""]) == "short"


def test_our_errors_redact_their_own_message() -> None:
    error = VectorStoreError(f"cannot reach host=db password={PW}")
    assert PW not in str(error)
    assert "host=db" in str(error)
    assert isinstance(error, PyWrapAIError)


def test_scrubbed_copies_the_chain_with_redacted_messages() -> None:
    try:
        try:
            raise ConnectionError(f"dial postgresql://u:{PW}@db failed")
        except ConnectionError as inner:
            raise RuntimeError(f"the key {PW} was refused") from inner
    except RuntimeError as outer:
        copy = scrubbed(outer, [PW])
    assert isinstance(copy, RedactedError)
    assert copy.original_type == "builtins.RuntimeError"
    assert str(copy) == "builtins.RuntimeError: the key *** was refused"
    assert isinstance(copy.__cause__, RedactedError)
    assert "postgresql://u:***@db" in str(copy.__cause__)
    assert copy.__cause__.__cause__ is None


def _shown(error: BaseException, caplog: pytest.LogCaptureFixture) -> str:
    with caplog.at_level(logging.ERROR):
        try:
            raise error
        except BaseException:
            logging.getLogger("test").exception("failed")
    return "".join(traceback.format_exception(error)) + caplog.text


@pytest.mark.parametrize(
    "dsn",
    [
        f"host=127.0.0.1 port=1 user=u password={PW} dbname=x connect_timeout=2",
        f"postgresql://u@127.0.0.1:1/x?password={PW}&connect_timeout=2",
        f"postgresql://u:{PW}@127.0.0.1:1/x?connect_timeout=2",
    ],
)
def test_pgvector_never_shows_the_password(dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.adapters.vectorstores.pgvector import PGVectorStore

    with pytest.raises(VectorStoreError) as info:
        PGVectorStore(dsn, dimension=4)
    assert "127.0.0.1" in str(info.value)
    assert PW not in _shown(info.value, caplog)


def test_chroma_url_credentials_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.adapters.vectorstores.chroma import ChromaVectorStore

    with pytest.raises(VectorStoreError) as info:
        ChromaVectorStore(url=f"http://admin:{PW}@127.0.0.1:1/?token={PW}")
    assert "cannot reach Chroma at 127.0.0.1:1" in str(info.value)  # host and port only
    assert PW not in _shown(info.value, caplog)


def test_qdrant_url_and_key_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.adapters.vectorstores.qdrant import QdrantVectorStore

    with pytest.raises(VectorStoreError) as info:
        QdrantVectorStore("docs", url=f"https://127.0.0.1:1/?api_key={PW}", api_key=PW)
    assert PW not in _shown(info.value, caplog)


def test_settings_repr_and_cli_stats_hide_url_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            "store": {"backend": "chroma", "url": f"http://admin:{PW}@127.0.0.1:1/?token={PW}"},
            "llm": {"base_url": f"https://u:{PW}@llm/v1?key={PW}", "api_key": PW},
            "embedder": {"api_key": PW},
        }
    )
    assert PW not in repr(settings)
    assert PW not in str(settings)
    assert PW not in settings.store.location()
    monkeypatch.chdir(tmp_path)  # no pywrapai.yaml here
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "chroma")
    monkeypatch.setenv("PYWRAPAI_STORE__URL", f"http://admin:{PW}@127.0.0.1:1/?token={PW}")
    out, err = io.StringIO(), io.StringIO()
    code = main(["store", "stats"], out=out, err=err)
    assert code == 1
    assert PW not in out.getvalue() + err.getvalue()
    assert "cannot reach Chroma at 127.0.0.1:1" in err.getvalue()
