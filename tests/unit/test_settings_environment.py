"""The PYWRAPAI_* environment layer reads variables exactly as pydantic-settings did.

``Settings`` was a pydantic-settings ``BaseSettings``; it is a plain pydantic model now (the
import of pydantic-settings cost a tenth of an ``ask``) and
``composition/environment.py`` keeps its rules. These properties compare both on random
environments and keyword values: the same nested values, the same validated settings, the
same errors.
"""

from __future__ import annotations

import os
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError, create_model
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict, SettingsError

from pywrapai_graph.composition.environment import environment_values
from pywrapai_graph.composition.settings import Settings, load_settings
from pywrapai_graph.errors import ConfigurationError


class _ReferenceBase(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PYWRAPAI_", env_nested_delimiter="__", extra="forbid"
    )


#: ``Settings`` as the pydantic-settings class it used to be: same fields, same rules
Reference: type[BaseSettings] = create_model(  # type: ignore[call-overload]
    "Reference",
    __base__=_ReferenceBase,
    **{name: (field.annotation, field) for name, field in Settings.model_fields.items()},
)


def _section_keys(name: str) -> list[str]:
    annotation = Settings.model_fields[name].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


SECTIONS = [*Settings.model_fields, "bogus"]
KEYS = sorted({k for s in Settings.model_fields for k in _section_keys(s)} | {"typo", ""})
VALUES = [
    "",
    "0",
    "3",
    "-1",
    "2.5",
    "true",
    "null",
    "openai",
    "hashing",
    "sqlite",
    "memory",
    "dense",
    '["a", "b"]',
    "[1]",
    '"text"',
    '{"provider": "ollama"}',
    '{"PROVIDER": "hashing", "Model": "m", "provider": "gemini"}',
    '{"backend": "faiss", "path": "x.faiss"}',
    '{"k": 2, "nope": 1}',
    "{not json",
    "[unclosed",
]


def _case(text: str, how: int) -> str:
    return (text.upper(), text.lower(), text.title())[how]


@st.composite
def env_name(draw: st.DrawFn) -> str:
    prefix = _case("pywrapai_", draw(st.integers(0, 2)))
    section = _case(draw(st.sampled_from(SECTIONS)), draw(st.integers(0, 2)))
    depth = draw(st.integers(0, 2))
    keys = [_case(draw(st.sampled_from(KEYS)), draw(st.integers(0, 2))) for _ in range(depth)]
    return "__".join([prefix + section, *keys])


environments = st.dictionaries(env_name(), st.sampled_from(VALUES), max_size=6)
keyword_values = st.dictionaries(
    st.sampled_from(["llm", "LLM", "store", "Store", "retriever", "rag_k", "RAG_K", "bogus"]),
    st.one_of(
        st.dictionaries(
            st.sampled_from([*KEYS[:12], "backend", "path", "k", "provider", "PROVIDER"]),
            st.sampled_from(["1", "memory", "sqlite", "hashing", "openai", "x.db", "dense"]),
            max_size=3,
        ),
        st.sampled_from(["2", "memory", "x"]),
    ),
    max_size=4,
)


def _outcome(build: Any) -> tuple[str, Any]:
    try:
        return "ok", build()
    except (SettingsError, ConfigurationError) as exc:
        return "env", str(exc).removeprefix("invalid PYWRAPAI_* environment variable: ")
    except ValidationError as exc:
        return "invalid", [(e["loc"], e["type"], e["msg"]) for e in exc.errors()]


@settings(max_examples=300, deadline=None)
@given(environments)
# a model inside a section, its keys in any case (the later one wins)
@example({"PYWRAPAI_RETRIEVER__RERANKER": '{"PROVIDER": "hashing", "Model": "m", "provider": "x"}'})
# a mapping's values are decoded leniently: text that is not JSON stays text
@example({"PYWRAPAI_MCP__SERVERS__": "openai"})
@example({"PYWRAPAI_MCP__SERVERS__API_KEY": "openai"})
@example({"PYWRAPAI_MCP__SERVERS__": "0"})
def test_the_environment_reads_as_pydantic_settings_read_it(env: dict[str, str]) -> None:
    with patch.dict(os.environ, env, clear=True):
        theirs = _outcome(EnvSettingsSource(Reference))
    ours = _outcome(lambda: environment_values(Settings, env))
    assert ours == theirs


@settings(max_examples=300, deadline=None)
@given(environments, keyword_values)
def test_settings_from_keywords_over_the_environment_are_the_same(
    env: dict[str, str], values: dict[str, Any]
) -> None:
    with patch.dict(os.environ, env, clear=True):
        theirs = _outcome(lambda: Reference(**values).model_dump())
        ours = _outcome(lambda: Settings(**values).model_dump())
    assert ours == theirs


def test_a_section_variable_that_is_not_json_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYWRAPAI_LLM", "{not json")
    with pytest.raises(ConfigurationError, match='field "llm"'):
        load_settings()
    with pytest.raises(ConfigurationError, match='field "llm"'):
        load_settings({"store": {"backend": "memory"}})


def test_keywords_win_over_the_environment_key_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__PATH", "env.db")
    monkeypatch.setenv("PYWRAPAI_RETRIEVER__K", "9")
    built = Settings(store={"backend": "sqlite"}, RETRIEVER={"k": 3})
    assert (built.store.path, built.retriever.k) == ("env.db", 3)


@pytest.mark.parametrize(
    "env",
    [
        {
            "PYWRAPAI_MCP__SERVERS__CALC__COMMAND": "python",
            "PYWRAPAI_MCP__SERVERS__CALC__ARGS": "[1]",
        },
        {
            "PYWRAPAI_MCP__SERVERS__CALC": '{"url": "u"}',
            "PYWRAPAI_MCP__SERVERS__CALC__HEADERS__A": "b",
        },
        {"PYWRAPAI_MCP__SERVERS": '{"a": {"command": "x"}}', "PYWRAPAI_MCP__SERVERS__B__URL": "0"},
        {"PYWRAPAI_MCP__SERVERS__": "0", "PYWRAPAI_MCP__SERVERS__C__ENV__TOKEN": "3"},
        {
            "PYWRAPAI_MCP": '{"servers": {"Q": {"command": "z"}}}',
            "PYWRAPAI_MCP__SERVERS__Q__ARGS": "[1]",
        },
    ],
)
def test_mcp_servers_nest_under_a_mapping_as_pydantic_settings_read_them(
    env: dict[str, str],
) -> None:
    """``mcp.servers`` maps names to models: deeper names reach the model under each name."""
    with patch.dict(os.environ, env, clear=True):
        theirs = _outcome(EnvSettingsSource(Reference))
    assert _outcome(lambda: environment_values(Settings, env)) == theirs
