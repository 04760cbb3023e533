"""The reference's "Full Tool-Calling Flow", verbatim.

Needs a provider: ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a local or proxy server).
"""

from pywrapai import LLM, Message, Role, ToolResult
from pywrapai_graph import GraphLLM, ToolRegistry, tool

llm = LLM(provider="anthropic", model="claude-haiku-4-5-20251001")
graph = GraphLLM(llm=llm)


# Step 1 — Define and register tools
@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


@tool
def search_docs(query: str, limit: int = 5) -> str:
    """Search internal documentation."""
    return f"Found {limit} results for: {query}"


registry = ToolRegistry()
registry.register(get_weather)
registry.register(search_docs)

print(registry.names)  # ["get_weather", "search_docs"]
print(len(registry))  # 2

# Step 2 — Call the LLM with the NEUTRAL schema (to_schema(), not provider-specific)
response = graph.chat(
    "What's the weather in London?",
    tools=registry.to_schema(),  # ← always use this
    tool_choice="auto",
)

# Step 3 — Check whether the model wants to call a tool
if response.tool_calls:
    tc = response.tool_calls[0]
    result = registry.execute(tc)
    print(result.content)  # "16°C, cloudy in London"

    # Step 4 — Build follow-up messages: assistant turn + tool result turn
    messages = [
        Message(Role.USER, "What's the weather in London?"),
        Message(Role.ASSISTANT, "", tool_calls=response.tool_calls),
        Message(Role.TOOL, result.content, tool_result=ToolResult(tc.id, tc.name, result.content)),
    ]

    # Step 5 — Call again so the model turns the result into a final reply
    final = graph.chat(messages)
    print(final.content)
    # → "The weather in London is 16°C and cloudy."
