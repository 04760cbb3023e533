"""The reference's "Full Agent Example", verbatim.

Needs a provider: OPENAI_API_KEY (and OPENAI_BASE_URL for a local or compatible server).
"""

from pywrapai import LLM
from pywrapai_graph import (
    Agent,
    AgentConfig,
    AgentMaxTurnsError,
    AgentResult,
    AgentStep,
    GraphLLM,
    ToolRegistry,
    tool,
)


# 1. Define tools
@tool
def search_docs(query: str) -> str:
    """Search internal documentation for a query."""
    return f"Found 3 results for '{query}': ..."


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


# 2. Register
registry = ToolRegistry()
registry.register(search_docs)
registry.register(get_weather)

# 3. Build agent
llm = LLM(provider="openai", model="gpt-4o-mini")
graph = GraphLLM(llm=llm).with_system_prompt(
    "You are a helpful assistant. Always call a tool to look up real data."
)


def log_step(step: AgentStep) -> None:
    for tc in step.tool_calls:
        print(f"  [{step.turn_num}] called {tc.name}({tc.arguments})")


config = AgentConfig(max_turns=8, on_step=log_step)
agent = Agent(graph=graph, registry=registry, config=config)

# 4. Run
try:
    result: AgentResult = agent.run("What's the weather in London?")
    print(result.content)
    print(f"Turns: {result.total_turns}  Cost: ${result.total_cost_usd:.6f}")

except AgentMaxTurnsError as exc:
    print(f"Hit limit after {exc.turns} turns.")
    print(f"Partial cost: ${exc.partial.total_cost_usd:.6f}")
