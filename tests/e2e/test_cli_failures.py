"""The CLI never shows a traceback: usage/config errors exit 2 in one line naming the key or
file, runtime failures exit 1 with one line and a hint, ``--debug`` adds the traceback."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pywrapai_graph.composition.cli import main
from pywrapai_graph.testing.wire import OpenAIWire


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no pywrapai.yaml, a fresh default store
    return tmp_path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def one_line_error(err: str) -> str:
    lines = err.splitlines()
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    return lines[0]


def test_a_non_utf8_config_file_is_one_line_naming_the_file(here: Path) -> None:
    (here / "bad.yaml").write_bytes(b"llm:\n  model: caf\xe9\n")
    code, _, err = run("--config", "bad.yaml", "store", "stats")
    assert code == 2
    assert "bad.yaml" in one_line_error(err) and "UTF-8" in err
    assert len(err.splitlines()) == 1


def test_an_endless_config_file_is_read_with_a_bound(here: Path) -> None:
    code, _, err = run("--config", "/dev/zero", "store", "stats")
    assert code == 2
    assert "/dev/zero" in one_line_error(err) and "larger than" in err


def test_an_unknown_pywrapai_variable_is_reported(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_BOGUS", "1")
    monkeypatch.setenv("PYWRAPAI_STORE_BACKEND", "faiss")  # a single underscore: a typo
    code, _, err = run("store", "stats")
    assert code == 2
    line = one_line_error(err)
    assert "PYWRAPAI_BOGUS" in line and "PYWRAPAI_STORE_BACKEND" in line


def test_bad_json_in_an_env_variable_without_a_config_file(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_LLM", "{not json")
    code, _, err = run("store", "stats")
    assert code == 2
    assert "llm" in one_line_error(err)


def test_a_config_error_names_the_key_on_one_line(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_RETRIEVER__K", "0")
    code, _, err = run("store", "stats")
    assert code == 2
    assert "retriever.k" in one_line_error(err)
    assert len(err.splitlines()) == 1


def test_an_unreachable_store_is_one_line_and_a_hint(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "chroma")
    monkeypatch.setenv("PYWRAPAI_STORE__URL", "http://127.0.0.1:1")
    code, _, err = run("store", "stats")
    assert code == 1
    one_line_error(err)
    assert err.splitlines()[1].startswith("hint: ")
    assert len(err.splitlines()) == 2


def test_a_malformed_provider_reply_is_one_line_and_a_hint(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIWire() as wire:
        wire.raw("<html>502 Bad Gateway</html>")
        monkeypatch.setenv("PYWRAPAI_LLM__PROVIDER", "openai")
        monkeypatch.setenv("PYWRAPAI_LLM__BASE_URL", wire.base_url)
        monkeypatch.setenv("PYWRAPAI_LLM__API_KEY", "sk-test-0123456789")
        monkeypatch.setenv("PYWRAPAI_LLM__MAX_RETRIES", "0")
        code, _, err = run("ask", "--no-rag", "hello?")
    assert code == 1
    assert "openai" in one_line_error(err)
    assert "hint: " in err


def test_debug_adds_the_traceback(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "chroma")
    monkeypatch.setenv("PYWRAPAI_STORE__URL", "http://admin:pw-SECRET@127.0.0.1:1")
    code, _, err = run("--debug", "store", "stats")
    assert code == 1
    assert "Traceback (most recent call last)" in err
    assert "pw-SECRET" not in err
    assert err.splitlines()[-2].startswith("error: ")
