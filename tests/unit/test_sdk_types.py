"""The adapters' SDK clients carry the SDKs' own types, so mypy checks every SDK call.

A snippet calls each adapter's client once with a misspelt keyword (or, for qdrant-client,
whose methods all take ``**kwargs``, a wrong argument type) and once correctly; mypy must
report an error on every wrong line and none on the right ones. With the clients typed
``Any`` (as they once were) mypy reports nothing and this test fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """\
from __future__ import annotations

from pywrapai_graph.adapters.embedders.openai import OpenAIEmbeddings
from pywrapai_graph.adapters.llm.anthropic import AnthropicChatModel
from pywrapai_graph.adapters.llm.gemini import GeminiChatModel
from pywrapai_graph.adapters.llm.ollama import OllamaChatModel
from pywrapai_graph.adapters.llm.openai import OpenAIChatModel
from pywrapai_graph.adapters.vectorstores.chroma.store import ChromaVectorStore
from pywrapai_graph.adapters.vectorstores.qdrant.store import QdrantVectorStore


def calls(
    o: OpenAIChatModel,
    a: AnthropicChatModel,
    g: GeminiChatModel,
    ol: OllamaChatModel,
    e: OpenAIEmbeddings,
    c: ChromaVectorStore,
    q: QdrantVectorStore,
) -> None:
    o._client.chat.completions.create(model="m", messages=[], temprature=0.2)  # WRONG openai
    a._client.messages.create(model="m", max_tokens=1, messages=[], stop_sequence=["x"])  # WRONG anthropic
    g._client.models.generate_content(model="m", contents="hi", confg=None)  # WRONG gemini
    ol._client.chat(model="m", messages=[], optons={})  # WRONG ollama
    e._client.embeddings.create(model="m", input=["x"], dimensons=3)  # WRONG openai-embeddings
    c._collection.query(query_texts=["x"], n_result=3)  # WRONG chroma
    q._client.query_points("c", query=[0.1], limit="three")  # WRONG qdrant
    o._client.chat.completions.create(model="m", messages=[], temperature=0.2)  # RIGHT
    a._client.messages.create(model="m", max_tokens=1, messages=[], stop_sequences=["x"])  # RIGHT
    g._client.models.generate_content(model="m", contents="hi", config=None)  # RIGHT
    ol._client.chat(model="m", messages=[], options={})  # RIGHT
    e._client.embeddings.create(model="m", input=["x"], dimensions=3)  # RIGHT
    c._collection.query(query_texts=["x"], n_results=3)  # RIGHT
    q._client.query_points("c", query=[0.1], limit=3)  # RIGHT
"""


def test_a_misspelt_sdk_keyword_fails_type_checking(tmp_path: Path) -> None:
    snippet = tmp_path / "sdk_calls.py"
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
        for m in re.finditer(r"sdk_calls\.py:(\d+): error:", result.stdout)
    }
    wrong = {i for i, line in enumerate(lines, 1) if "# WRONG" in line}
    right = {i for i, line in enumerate(lines, 1) if "# RIGHT" in line}
    assert len(wrong) == len(right) == 7
    missed = [lines[i - 1].split("# WRONG ")[1] for i in sorted(wrong - flagged)]
    assert not missed, f"mypy let these wrong SDK calls through: {missed}\n{errors}"
    assert not flagged & right, errors
    assert flagged <= wrong, errors
