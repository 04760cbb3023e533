"""An agent with a retrieval tool and a plain tool, runnable offline.

    python examples/agent_example.py

The scripted model plays the LLM: it asks for the knowledge-base search, then the weather,
then answers. Swap ``ScriptedChatModel(...)`` for ``provider="openai"`` to use a real model.
"""

from __future__ import annotations

import asyncio

from pywrapai import LLM, ToolCall
from pywrapai_graph import (
    Agent,
    AgentConfig,
    AgentStep,
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    InMemoryVectorStore,
    ToolRegistry,
    VectorRetriever,
    retrieval_tool,
    tool,
)
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name, e.g. Lyon.
    """
    return f"16°C, cloudy in {city}"


def build_agent() -> Agent:
    retriever = VectorRetriever(FeatureHashingEmbedder(), InMemoryVectorStore(), k=2)
    retriever.add_documents(
        [
            Document("Acme ships every order from its warehouse in Lyon, France."),
            Document("Express shipping takes 1 business day and costs 9.90 euros."),
        ]
    )
    registry = ToolRegistry()
    registry.register(retrieval_tool(retriever, name="search_knowledge_base"))
    registry.register(get_weather)
    model = ScriptedChatModel(
        [
            ScriptedReply(
                tool_calls=[ToolCall("c1", "search_knowledge_base", {"query": "warehouse"})]
            ),
            ScriptedReply(tool_calls=[ToolCall("c2", "get_weather", {"city": "Lyon"})]),
            "Your parcel leaves our Lyon warehouse, where it is 16°C and cloudy today.",
        ]
    )
    graph = GraphLLM(llm=LLM(provider=model)).with_system_prompt(
        "You are Acme's assistant. Always call a tool to look up real data."
    )

    def log_step(step: AgentStep) -> None:
        for call, timing in zip(step.tool_calls, step.timings, strict=True):
            print(
                f"  [{step.turn_num}] {call.name}({dict(call.arguments)}) "
                f"in {timing.seconds * 1000:.1f} ms"
            )

    return Agent(graph=graph, registry=registry, config=AgentConfig(max_turns=5, on_step=log_step))


def main() -> None:
    result = asyncio.run(
        build_agent().arun("Where does my parcel ship from, and what's the weather?")
    )
    print(result.content)
    print(f"turns={result.total_turns} steps={len(result.steps)} cost=${result.total_cost_usd:.6f}")


if __name__ == "__main__":
    main()
