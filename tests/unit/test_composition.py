"""The container: every selector branch builds and works; configuration errors are clear."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import Document
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import ConfigurationError
from pywrapai_graph.testing.wire import OpenAIWire


def local_backends(tmp: Path) -> dict[str, dict[str, Any]]:
    return {
        "memory": {"backend": "memory"},
        "sqlite": {"backend": "sqlite", "path": str(tmp / "s.db")},
        "faiss": {"backend": "faiss", "path": str(tmp / "f" / "store.faiss")},
        "chroma": {"backend": "chroma", "path": str(tmp / "chroma")},
        "qdrant": {"backend": "qdrant", "path": str(tmp / "qdrant")},
        "qdrant-memory": {"backend": "qdrant", "path": ":memory:"},
    }


@pytest.mark.parametrize("name", ["memory", "sqlite", "faiss", "chroma", "qdrant", "qdrant-memory"])
def test_every_local_backend_builds_and_answers(tmp_path: Path, name: str) -> None:
    container = build_container({"store": local_backends(tmp_path)[name]})
    store = container.vector_store()
    assert (
        type(store)
        .__name__.lower()
        .startswith(name.split("-", maxsplit=1)[0].replace("memory", "inmemory"))
    )
    retriever = container.retriever()
    assert retriever.store is store
    retriever.add_documents(
        [Document("Paris is the capital of France."), Document("Bananas are yellow fruit.")],
        chunker=container.chunker(),
    )
    assert retriever.retrieve("capital of France", k=1)[0].chunk.text.startswith("Paris")
    assert len(store) == 2
    store.close()


def test_swapping_backend_is_config_only(tmp_path: Path) -> None:
    a = build_container({"store": {"backend": "sqlite", "path": str(tmp_path / "a.db")}})
    b = build_container({"store": {"backend": "memory"}})
    assert type(a.vector_store()).__name__ == "SQLiteVectorStore"
    assert type(b.vector_store()).__name__ == "InMemoryVectorStore"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"store": {"backend": "mongo"}}, "store.backend"),
        ({"store": {"backend": "pgvector", "dimension": 8}}, "store.dsn is required"),
        (
            {"store": {"backend": "pgvector", "dsn": "postgresql://x"}},
            "store.dimension is required",
        ),
        (
            {"store": {"backend": "chroma", "path": "c", "url": "http://c:8000"}},
            "takes store.path or store.url, not both",
        ),
        ({"llm": {"providr": "openai"}}, "llm.providr"),
        ({"llm": {"provider": "cohere"}}, "llm.provider"),
        ({"chunker": {"chunk_size": 100, "overlap": 100}}, "overlap must be smaller"),
        ({"retriever": {"k": 0}}, "retriever.k"),
        ({"embed_concurrency": -1}, "embed_concurrency"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid configuration") as info:
        build_container(config)
    assert expected in str(info.value)


def test_all_errors_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_settings({"store": {"backend": "mongo"}, "rag_k": 0})
    assert "store.backend" in str(info.value)
    assert "rag_k" in str(info.value)


def test_environment_nested_with_double_underscore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "memory")
    monkeypatch.setenv("PYWRAPAI_RETRIEVER__K", "7")
    settings = load_settings()
    assert settings.store.backend == "memory"
    assert settings.retriever.k == 7
    assert build_container().retriever().k == 7
    # values passed in code win over the environment, which wins over a file
    assert load_settings({"retriever": {"k": 2}}).retriever.k == 2


def test_embed_concurrency_reaches_the_retriever(monkeypatch: pytest.MonkeyPatch) -> None:
    assert build_container({"store": {"backend": "memory"}}).retriever().embed_concurrency == 4
    monkeypatch.setenv("PYWRAPAI_EMBED_CONCURRENCY", "8")
    assert build_container({"store": {"backend": "memory"}}).retriever().embed_concurrency == 8
    config = {"store": {"backend": "memory"}, "embed_concurrency": 0}
    assert build_container(config).retriever().embed_concurrency == 0


def test_environment_overrides_the_yaml_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pywrapai.yaml"
    path.write_text("store:\n  backend: sqlite\n  path: from-file.db\nretriever:\n  k: 3\n")
    monkeypatch.setenv("PYWRAPAI_STORE__PATH", "from-env.db")
    settings = load_settings(path)
    assert (settings.store.backend, settings.store.path, settings.retriever.k) == (
        "sqlite",
        "from-env.db",
        3,
    )


def test_yaml_file_valid_malformed_and_wrong_shape(tmp_path: Path) -> None:
    good = tmp_path / "pywrapai.yaml"
    good.write_text("store:\n  backend: memory\nrag_k: 2\n")
    assert load_settings(good).rag_k == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("store:\n  backend: [memory\n")
    with pytest.raises(ConfigurationError, match=r"not valid YAML at line \d+"):
        load_settings(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n")
    with pytest.raises(ConfigurationError, match="must hold a mapping"):
        load_settings(listy)
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_settings(tmp_path / "missing.yaml")


def test_secrets_hidden_in_settings_repr() -> None:
    settings = load_settings(
        {
            "llm": {"provider": "openai", "api_key": "sk-very-secret-1234"},
            "store": {"backend": "pgvector", "dsn": "postgresql://u:pw@h/db", "dimension": 8},
        }
    )
    assert "sk-very-secret" not in repr(settings)
    assert "pw@h" not in repr(settings)


def test_llm_and_graph_from_config_through_the_wire(tmp_path: Path) -> None:
    with OpenAIWire() as wire:
        wire.reply("Paris.")
        prompts = tmp_path / "prompts"
        prompts.mkdir()
        (prompts / "a-v1.txt").write_text("You answer briefly.")
        container = build_container(
            {
                "llm": {
                    "provider": "openai",
                    "model": "gpt-4o-mini",
                    "api_key": "k",
                    "base_url": wire.base_url,
                    "max_retries": 0,
                },
                "store": {"backend": "memory"},
                "prompts": {"dir": str(prompts), "file": "a-v1.txt"},
            }
        )
        graph = container.graph()
        assert graph.chat("Capital of France?").content == "Paris."
        sent = wire.requests[0].json["messages"]
        assert sent[0] == {"role": "system", "content": "You answer briefly."}
        agent = container.agent()
        assert agent.graph is graph
        llm = container.llm()
        assert llm is not None
        llm.close()


def test_no_provider_gives_no_llm_but_a_usable_graph() -> None:
    container = build_container({"store": {"backend": "memory"}})
    assert container.llm() is None
    messages, hits = container.graph().assemble("hello")
    assert messages[-1].content == "hello"
    assert hits == []
    with pytest.raises(ConfigurationError, match="PYWRAPAI_LLM__PROVIDER"):
        container.graph().chat("hello")
