"""Generation parameters: typed, per call on LLM/GraphLLM/Agent, defaults from config."""

from __future__ import annotations

import pytest

from pywrapai import LLM
from pywrapai_graph import Agent, GraphLLM, ToolRegistry
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import ChatRequest, GenerationParams
from pywrapai_graph.errors import ConfigurationError
from pywrapai_graph.testing import ScriptedChatModel


def generation_of(request: ChatRequest) -> dict[str, object]:
    return request.generation.given()


async def test_graph_and_agent_forward_every_parameter() -> None:
    fake = ScriptedChatModel(respond=lambda r: '{"x": 1}')
    llm = LLM(provider=fake, generation=GenerationParams(max_tokens=512, temperature=0.2))
    graph = GraphLLM(llm)
    graph.chat("a", max_tokens=5, stop=["\n\n"])
    assert generation_of(fake.requests[-1]) == {
        "max_tokens": 5,
        "temperature": 0.2,
        "stop": ("\n\n",),
    }
    await graph.achat("a", seed=7)
    assert generation_of(fake.requests[-1]) == {"max_tokens": 512, "temperature": 0.2, "seed": 7}
    "".join(graph.stream("a", top_p=0.5))
    assert fake.requests[-1].top_p == 0.5
    assert "".join([p async for p in graph.astream("a", temperature=1.0)]) == '{"x": 1}'
    assert fake.requests[-1].temperature == 1.0

    from pydantic import BaseModel

    class X(BaseModel):
        x: int

    graph.chat_structured("a", X, max_tokens=9)
    assert fake.requests[-1].max_tokens == 9
    await graph.achat_structured("a", X, max_tokens=10)
    assert fake.requests[-1].max_tokens == 10
    agent = Agent(graph, ToolRegistry())
    agent.run("a", max_tokens=11)
    assert fake.requests[-1].max_tokens == 11
    await agent.arun("a", temperature=0.0, seed=3)
    assert generation_of(fake.requests[-1]) == {"max_tokens": 512, "temperature": 0.0, "seed": 3}


def test_defaults_come_from_config_and_are_validated() -> None:
    container = build_container(
        {
            "store": {"backend": "memory"},
            "llm": {"provider": "openai", "api_key": "k", "max_tokens": 512, "stop": ["END"]},
        }
    )
    llm = container.llm()
    assert llm is not None
    assert llm.generation == GenerationParams(max_tokens=512, stop=("END",))
    with pytest.raises(ConfigurationError, match=r"llm\.temperature"):
        build_container({"llm": {"provider": "openai", "temperature": 5}})
    with pytest.raises(ConfigurationError, match=r"llm\.top_p"):
        build_container({"llm": {"provider": "openai", "top_p": 0}})


def test_unknown_and_bad_parameters_are_named() -> None:
    llm = LLM(provider=ScriptedChatModel(["x"]))
    with pytest.raises(ConfigurationError, match="unknown generation parameter"):
        llm.chat("a", max_token=5)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="temperature"):
        GenerationParams(temperature=float("nan"))
    with pytest.raises(ConfigurationError, match="max_tokens"):
        GenerationParams(max_tokens=True)
    assert GenerationParams(stop=["a", "b"]).stop == ("a", "b")  # type: ignore[arg-type]
