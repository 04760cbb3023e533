from __future__ import annotations

import json
import subprocess
import sys

import pywrapai
import pywrapai_graph

HEAVY = [
    "numpy",
    "openai",
    "anthropic",
    "google.genai",
    "ollama",
    "chromadb",
    "faiss",
    "qdrant_client",
    "qdrant_edge",
    "psycopg2",
    "pgvector",
    "httpx",
    "pydantic",
    "dependency_injector",
]


def test_import_loads_no_sdk_driver_or_numpy() -> None:
    code = (
        "import sys, json, pywrapai_graph, pywrapai; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_every_exported_name_resolves() -> None:
    for name in pywrapai_graph.__all__:
        assert getattr(pywrapai_graph, name) is not None, name
    for name in pywrapai.__all__:
        assert getattr(pywrapai, name) is getattr(pywrapai_graph, name), name


def test_foundation_names_of_the_reference() -> None:
    from pywrapai import LLM, LLMResponse, Message, Role, TokenUsage, ToolCall, ToolResult  # noqa: F401
    from pywrapai_graph import (  # noqa: F401
        BaseRetriever,
        Chunk,
        Document,
        GraphLLM,
        PromptRegistry,
        ScoredChunk,
        Tool,
        ToolRegistry,
        tool,
    )


def test_unknown_attribute_is_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError):
        _ = pywrapai_graph.NotAThing
    with pytest.raises(AttributeError):
        _ = pywrapai.NotAThing


def test_reference_module_paths() -> None:
    from pywrapai_graph.agent import Agent, AgentConfig
    from pywrapai_graph.rag.retriever import BaseRetriever, VectorRetriever
    from pywrapai_graph.tools.tool import Tool

    assert Tool is pywrapai_graph.Tool
    assert BaseRetriever is pywrapai_graph.BaseRetriever
    assert VectorRetriever is pywrapai_graph.VectorRetriever
    assert (Agent, AgentConfig) == (pywrapai_graph.Agent, pywrapai_graph.AgentConfig)
