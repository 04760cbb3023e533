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
from pywrapai_graph.redaction import MASK, RedactedError, bare_url, redact, scrubbed
from tests.secret_forms import FORMS, GITHUB

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


@pytest.mark.parametrize(("text", "secret", "kept"), FORMS)
def test_redact_masks_secrets_in_every_common_form(text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert secret not in out
    assert kept in out and MASK in out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=5, k=3, table 'docs', http://localhost:8000/api/v1 tokens: 12",
        "chunk 3f2504e0-4f89-11d3-9a0c-0305e82c3301 of doc 9b74c9897bac770ffc029102a200c5de",
        "commit 0123456789abcdef0123456789abcdef01234567 at 2026-12-07T07:30:37Z",
        "pywrapai_graph.adapters.vectorstores.qdrant.store.QdrantVectorStore.add failed",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 (0 bytes)",
        "output_tokens: 12, input_tokens: 30, cache_read_tokens: 0",
    ],
)
def test_redact_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text


def test_an_image_url_keeps_only_its_scheme_host_and_path() -> None:
    url = f"https://user:{PW}@cdn.example.com/cat.png?sig={PW}#access_token={PW}"
    assert bare_url(url) == "https://cdn.example.com/cat.png"
    assert bare_url(f"https://{GITHUB}@cdn.example.com/a.png") == "https://cdn.example.com/a.png"
    assert bare_url(f"https://u:{PW}/x@host/p.png") == "https://u:***@host/p.png"


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
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    with pytest.raises(VectorStoreError) as info:
        PGVectorStore(dsn, dimension=4)
    assert "127.0.0.1" in str(info.value)
    assert PW not in _shown(info.value, caplog)


def test_chroma_url_credentials_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.adapters.vectorstores.chroma.store import ChromaVectorStore

    with pytest.raises(VectorStoreError) as info:
        ChromaVectorStore(url=f"http://admin:{PW}@127.0.0.1:1/?token={PW}")
    assert "cannot reach Chroma at 127.0.0.1:1" in str(info.value)  # host and port only
    assert PW not in _shown(info.value, caplog)


def test_qdrant_url_and_key_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.adapters.vectorstores.qdrant.store import QdrantVectorStore

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


# --------------------------------------------------------------- gaps closed in issue 24 item 5


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"clone http://{PW}@github.com/o/r failed", "clone http://***@github.com/o/r failed"),
        (f"GET https://{PW}@api.example.com/v1", "GET https://***@api.example.com/v1"),
        (f"env OPENAI_API_KEY={PW} set", "env OPENAI_API_KEY=*** set"),
        (f"PGPASSWORD={PW} psql -h db", "PGPASSWORD=*** psql -h db"),
        (f"export ANTHROPIC_API_KEY='{PW} x' && run", "export ANTHROPIC_API_KEY='***' && run"),
        (
            f"GITHUB_TOKEN={PW} AWS_SECRET_ACCESS_KEY={PW}",
            "GITHUB_TOKEN=*** AWS_SECRET_ACCESS_KEY=***",
        ),
        (f"mysql_root_password={PW}", "mysql_root_password=***"),
        (f'{{"OPENAI_API_KEY": "{PW}"}}', '{"OPENAI_API_KEY": "***"}'),
        (f"password: {PW} with spaces\nnext", "password: ***\nnext"),
    ],
)
def test_redact_masks_bare_userinfo_and_environment_assignments(text: str, kept: str) -> None:
    out = redact(text)
    assert "Hunter2" not in out
    assert kept in out


def test_environment_style_masking_leaves_counts_alone() -> None:
    text = "max_tokens=5 max_output_tokens=7 num_tokens: 3 token_count=4"
    assert redact(text) == text


RESERVED = ["@", ":", "/", "?", "#", "[", "]", "@:/?#[]"]


def _reserved_pw(chars: str) -> str:
    return f"Hunter2{chars}TAILpw"


def _hidden(text: str) -> bool:
    return "Hunter2" not in text and "TAILpw" not in text


@pytest.mark.parametrize("chars", RESERVED)
@pytest.mark.parametrize(
    "form",
    [
        "postgresql://u:{pw}@db:5432/app",
        "postgres://u:{pw}@db/app?sslmode=require",
        "http://admin:{pw}@chroma:8000/x",
        "https://admin:{pw}@qdrant:6333",
        "host=db port=5432 password={pw} dbname=app",
        "https://x/v1?token={pw}",
    ],
)
def test_redact_hides_passwords_with_reserved_characters(chars: str, form: str) -> None:
    out = redact(form.format(pw=_reserved_pw(chars)))
    assert _hidden(out), out


@pytest.mark.parametrize("chars", RESERVED)
def test_key_value_dsn_with_reserved_characters_is_masked_in_connect_errors(
    chars: str, caplog: pytest.LogCaptureFixture
) -> None:
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    dsn = f"host=127.0.0.1 port=1 user=u password={_reserved_pw(chars)} connect_timeout=2"
    with pytest.raises(VectorStoreError) as info:
        PGVectorStore(dsn, dimension=4)
    assert "127.0.0.1:1" in str(info.value)
    assert _hidden(_shown(info.value, caplog))


@pytest.mark.parametrize("chars", ["@", "/", "?", "#", "[", "]", "@:/?#[]"])
def test_pg_url_with_unencoded_reserved_password_is_refused_naming_the_fix(
    chars: str, caplog: pytest.LogCaptureFixture
) -> None:
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore
    from pywrapai_graph.errors import ConfigurationError

    dsn = f"postgresql://u:{_reserved_pw(chars)}@127.0.0.1:1/app?connect_timeout=2"
    with pytest.raises(ConfigurationError, match="percent-encode") as info:
        PGVectorStore(dsn, dimension=4)
    assert _hidden(_shown(info.value, caplog))


def test_pg_url_with_percent_encoded_reserved_password_connects_to_its_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from urllib.parse import quote

    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    pw = _reserved_pw("@:/?#[]")
    dsn = f"postgresql://u:{quote(pw, safe='')}@127.0.0.1:1/app?connect_timeout=2"
    with pytest.raises(VectorStoreError) as info:
        PGVectorStore(dsn, dimension=4)
    assert "cannot reach PostgreSQL at 127.0.0.1:1" in str(info.value)
    assert _hidden(_shown(info.value, caplog))


@pytest.mark.parametrize("chars", ["@", "/", "?", "#", "[", "]"])
def test_http_store_urls_with_unencoded_reserved_password_are_refused(
    chars: str, caplog: pytest.LogCaptureFixture
) -> None:
    from pywrapai_graph.adapters.vectorstores.chroma.store import ChromaVectorStore
    from pywrapai_graph.adapters.vectorstores.qdrant.store import QdrantVectorStore
    from pywrapai_graph.errors import ConfigurationError

    url = f"http://admin:{_reserved_pw(chars)}@127.0.0.1:1"
    with pytest.raises(ConfigurationError, match="percent-encode") as chroma:
        ChromaVectorStore(url=url)
    with pytest.raises(ConfigurationError, match="percent-encode") as qdrant:
        QdrantVectorStore("docs", url=url)
    assert _hidden(_shown(chroma.value, caplog) + _shown(qdrant.value, caplog))


def test_address_never_shows_a_password_tail_as_the_host() -> None:
    from pywrapai_graph.adapters._unreachable import address

    for chars in RESERVED:
        assert _hidden(address(f"http://u:{_reserved_pw(chars)}@127.0.0.1:1"))
    assert address("http://u:pw@127.0.0.1:1") == "127.0.0.1:1"
    assert address("http://127.0.0.1:8000/x?mail=a@b.c") == "127.0.0.1:8000"


@pytest.mark.parametrize("chars", ["@", "/", "#"])
def test_llm_and_embedder_base_urls_with_unencoded_reserved_password_are_refused(
    chars: str,
) -> None:
    from pywrapai_graph import LLM, Embedder
    from pywrapai_graph.errors import ConfigurationError

    url = f"http://u:{_reserved_pw(chars)}@127.0.0.1:1/v1"
    with pytest.raises(ConfigurationError, match="openai base_url") as chat:
        LLM(provider="openai", base_url=url, api_key="k")
    with pytest.raises(ConfigurationError, match="ollama base_url") as embed:
        Embedder(provider="ollama", base_url=url)
    assert _hidden(str(chat.value) + str(embed.value))
