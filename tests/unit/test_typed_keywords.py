"""The public entry points that take keyword options name them, so a misspelt keyword is a
``mypy --strict`` error and a ``TypeError`` at run time.

A snippet calls each entry point once with a misspelt keyword and once correctly; mypy must
report an error on every wrong line and none on the right ones. With the container's
per-request providers typed ``providers.Factory`` (``**kwargs: Any``) or the facades taking
``**options: Any`` (as they once did), mypy reports nothing and this test fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pywrapai_graph import Embedder
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.llm import LLM
from pywrapai_graph.composition.reranker import RerankModel

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """\
from __future__ import annotations

from pywrapai_graph import Embedder
from pywrapai_graph.composition.container import Container
from pywrapai_graph.composition.llm import LLM
from pywrapai_graph.composition.reranker import RerankModel


def calls(container: Container) -> None:
    container.scoped_graph(scopes={"tenant": "acme"})  # WRONG scoped_graph(scopes=)
    container.scoped_graph(scope={"tenant": "acme"})  # RIGHT
    container.scoped_retriever(scopes={"tenant": "acme"})  # WRONG scoped_retriever(scopes=)
    container.scoped_retriever(scope={"tenant": "acme"})  # RIGHT
    LLM(provider="openai", api_kye="sk-test")  # WRONG LLM(api_kye=)
    LLM(provider="openai", api_key="sk-test", timeout=5.0)  # RIGHT
    Embedder(provider="hashing", dimensions=64)  # WRONG Embedder(dimensions=)
    Embedder(provider="hashing", dimension=64)  # RIGHT
    RerankModel(provider="cohere", max_retry=2)  # WRONG RerankModel(max_retry=)
    RerankModel(provider="cohere", max_retries=2)  # RIGHT
"""


def test_a_misspelt_keyword_fails_type_checking(tmp_path: Path) -> None:
    snippet = tmp_path / "keyword_calls.py"
    snippet.write_text(SNIPPET, encoding="utf-8")
    # Run from the repository so the project's mypy.ini and its warm cache are used.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty", "--no-error-summary", str(snippet)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    errors = "\n".join(line for line in result.stdout.splitlines() if ": error:" in line)
    lines = SNIPPET.splitlines()
    flagged = {
        int(m.group(1))
        # (not the full path: mypy may replay an unchanged module's errors from its cache)
        for m in re.finditer(r"keyword_calls\.py:(\d+): error:", result.stdout)
    }
    wrong = {i for i, line in enumerate(lines, 1) if "# WRONG" in line}
    right = {i for i, line in enumerate(lines, 1) if "# RIGHT" in line}
    assert len(wrong) == len(right) == 5
    missed = [lines[i - 1].split("# WRONG ")[1] for i in sorted(wrong - flagged)]
    assert not missed, f"mypy let these misspelt keywords through: {missed}\n{errors}"
    assert not flagged & right, errors
    assert flagged <= wrong, errors


def test_a_misspelt_keyword_is_a_type_error_naming_it_at_run_time() -> None:
    config = {"embedder": {"provider": "hashing"}, "store": {"backend": "memory"}}
    with build_container(config) as container:
        with pytest.raises(TypeError, match="'scopes'"):
            container.scoped_graph(scopes={"tenant": "acme"})  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="'scopes'"):
            container.scoped_retriever(scopes={"tenant": "acme"})  # type: ignore[call-arg]
        assert container.scoped_retriever(scope={"tenant": "acme"}).scope == {"tenant": "acme"}
    with pytest.raises(TypeError, match="'api_kye'"):
        LLM(provider="openai", api_kye="sk-test")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'dimensions'"):
        Embedder(provider="hashing", dimensions=64)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'max_retry'"):
        RerankModel(provider="cohere", max_retry=2)  # type: ignore[call-arg]
