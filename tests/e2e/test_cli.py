"""The pywrapai-graph command, as a shell user runs it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pywrapai_graph.composition.cli import main
from pywrapai_graph.testing.wire import OpenAIWire

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for var in ("PYWRAPAI_LLM__PROVIDER", "PYWRAPAI_STORE__BACKEND"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "refunds.md").write_text(
        "# Refunds\n\nRefunds are issued within 5 business days after we receive the parcel.\n"
    )
    (tmp_path / "docs" / "shipping.txt").write_text(
        "Standard shipping takes 3 to 5 business days and is free over 50 euros.\n"
    )
    (tmp_path / "docs" / "image.png").write_bytes(b"\x89PNG not text")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "support-v1.txt").write_text("You are a support agent.")
    (tmp_path / "pywrapai.yaml").write_text(
        "store:\n  backend: sqlite\n  path: kb/store.db\n"
        "prompts:\n  dir: prompts\n  file: support-v1.txt\n"
    )
    return tmp_path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_ingest_is_idempotent_and_replaces_changed_files(workdir: Path) -> None:
    code, out, _ = run("ingest", "docs")
    assert code == 0
    assert "ingested   docs/refunds.md" in out
    assert "image.png" not in out  # only text and Markdown files
    first_total = out.strip().splitlines()[-1]
    assert first_total.startswith("2 chunks added, 0 files unchanged")
    code, out, _ = run("ingest", "docs")
    assert (
        out.strip().splitlines()[-1]
        == "0 chunks added, 2 files unchanged, 0 files replaced, 0 files skipped; "
        "2 chunks in the store"
    )
    (workdir / "docs" / "refunds.md").write_text("Refunds now take 10 business days.\n")
    code, out, _ = run("ingest", "docs/refunds.md")
    assert code == 0
    assert (
        out.strip().splitlines()[-1]
        == "1 chunks added, 0 files unchanged, 1 files replaced, 0 files skipped; "
        "2 chunks in the store"
    )


def test_ask_without_provider_shows_messages_and_how_to_configure(workdir: Path) -> None:
    run("ingest", "docs")
    code, out, _ = run("ask", "How long do refunds take?")
    assert code == 0
    assert out.startswith("[SYSTEM]\nYou are a support agent.\n\n[USER]\nUse the following context")
    assert "Refunds are issued within 5 business days" in out
    assert "Question: How long do refunds take?" in out
    assert "PYWRAPAI_LLM__PROVIDER=openai" in out
    code, out, _ = run("ask", "--no-rag", "Hello")
    assert "<context>" not in out


def test_ask_through_a_provider(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run("ingest", "docs")
    with OpenAIWire() as wire:
        wire.reply("Refunds take 5 business days.")
        monkeypatch.setenv("PYWRAPAI_LLM__PROVIDER", "openai")
        monkeypatch.setenv("PYWRAPAI_LLM__MAX_RETRIES", "0")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", wire.base_url)
        code, out, _ = run("ask", "--show-messages", "How long do refunds take?")
    assert code == 0
    assert "[USER]\nUse the following context" in out
    assert "Refunds take 5 business days." in out
    assert "[openai/gpt-4o-mini]" in out
    assert "Refunds are issued within 5" in wire.requests[0].json["messages"][-1]["content"]


def test_provider_failure_is_exit_1(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIWire() as wire:
        wire.fail(401, "bad key")
        monkeypatch.setenv("PYWRAPAI_LLM__PROVIDER", "openai")
        monkeypatch.setenv("PYWRAPAI_LLM__MAX_RETRIES", "0")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", wire.base_url)
        code, _, err = run("ask", "x")
    assert code == 1
    assert err.startswith("error: openai at 127.0.0.1:")
    assert "rejected the credentials (HTTP 401)" in err
    assert "bad key" in err


def test_prompts_list_and_store_stats(workdir: Path) -> None:
    code, out, _ = run("prompts", "list")
    assert (code, out) == (0, "support-v1.txt  (in use)\n")
    run("ingest", "docs")
    code, out, _ = run("store", "stats")
    assert code == 0
    assert "backend:   sqlite\nlocation:  kb/store.db\nchunks:    2\ndimension: 384\n" in out


def test_store_compact_vacuums_the_faiss_file(workdir: Path) -> None:
    config = (workdir / "pywrapai.yaml").read_text()
    (workdir / "pywrapai.yaml").write_text(
        config.replace("backend: sqlite\n  path: kb/store.db", "backend: faiss\n  path: kb/s.faiss")
    )
    assert run("ingest", "docs/refunds.md")[0] == 0
    assert run("ingest", "docs/shipping.txt")[0] == 0
    (workdir / "docs" / "refunds.md").write_text("Refunds now take 10 business days.\n")
    assert run("ingest", "docs/refunds.md")[0] == 0  # the old row deleted
    question = ("ask", "How long do refunds take?", "--show-messages", "--no-rag")
    answers = run("ask", "How long do refunds take?", "--show-messages"), run(*question)
    stats = run("store", "stats")
    assert "chunks:    2\n" in stats[1]

    assert run("store", "compact") == (0, "compacted: kb/s.faiss\n", "")
    assert not (workdir / "kb" / "s.faiss").exists()  # no index file: one SQLite file
    assert (run("ask", "How long do refunds take?", "--show-messages"), run(*question)) == answers
    assert "Refunds now take 10 business days." in answers[0][1]
    assert run("store", "stats") == stats
    code, out, _ = run("ingest", "docs")
    assert (code, out.strip().splitlines()[-1]) == (
        0,
        "0 chunks added, 2 files unchanged, 0 files replaced, 0 files skipped; "
        "2 chunks in the store",
    )
    assert run("store", "compact") == (0, "compacted: kb/s.faiss\n", "")  # again: no harm


def test_store_compact_has_nothing_to_do_on_sqlite(workdir: Path) -> None:
    """Run as the installed program: a message, exit 0, the store untouched."""
    assert run("ingest", "docs")[0] == 0
    before = run("store", "stats")
    script = Path(sys.executable).parent / "pywrapai-graph"
    done = subprocess.run(
        [str(script), "store", "compact"],
        capture_output=True,
        text=True,
        check=False,
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "nothing to compact for the sqlite backend (only FAISS compacts its file)\n"
    )
    assert run("store", "stats") == before


def test_errors_and_exit_codes(workdir: Path) -> None:
    code, _, err = run("ingest", "nope.md")
    assert (code, err) == (1, "error: no such file or directory: nope.md\n")
    (workdir / "pywrapai.yaml").write_text("store: [sqlite\n")
    code, _, err = run("store", "stats")
    assert code == 2
    assert "not valid YAML at line" in err
    (workdir / "pywrapai.yaml").write_text("store:\n  backend: mongo\n")
    code, _, err = run("store", "stats")
    assert code == 2
    assert "store.backend" in err
    code, _, err = run("--config", "missing.yaml", "store", "stats")
    assert code == 2
    assert "cannot read config file" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["ingest"],
        ["ask"],
        ["prompts"],
        ["prompts", "list"],
        ["store"],
        ["store", "stats"],
        ["store", "compact"],
    ],
)
def test_help_on_every_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    assert "usage: pywrapai-graph" in capsys.readouterr().out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "pywrapai-graph"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True)
    assert "ingest" in out.stdout
    assert "ask" in out.stdout


def test_ask_with_a_local_reranker_from_the_configuration(workdir: Path) -> None:
    from pywrapai_graph.testing.cross_encoder import write_tiny_cross_encoder

    question = "How long do refunds take? Is shipping free?"
    base = "store:\n  backend: sqlite\n  path: kb/store.db\nrag_k: 1\n"
    (workdir / "pywrapai.yaml").write_text(base)
    run("ingest", "docs")
    _, plain, _ = run("ask", question)
    assert "Standard shipping" in plain and "Refunds are issued" not in plain
    write_tiny_cross_encoder(workdir / "reranker", {"refunds": 5.0, "parcel": 1.0})
    (workdir / "pywrapai.yaml").write_text(
        base + "retriever:\n  reranker:\n    provider: local\n    model_dir: reranker\n"
    )
    code, out, _ = run("ask", question)
    assert code == 0
    assert "Refunds are issued within 5 business days" in out  # the model's choice
    assert "Standard shipping" not in out
