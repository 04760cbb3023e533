"""The reference's streaming example: ``graph.stream`` with token tracking.

Needs a provider: ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a local or proxy server).
"""

from pywrapai import LLM
from pywrapai_graph import GraphLLM

llm = LLM(provider="anthropic", model="claude-haiku-4-5-20251001")
graph = GraphLLM(llm=llm)

for chunk in graph.stream("Write a story", history=None):
    print(chunk, end="", flush=True)
print()
print(graph.tokens.total_input_tokens, graph.tokens.total_output_tokens)
