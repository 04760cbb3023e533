"""retrieval_tool: exposes any retriever to the model as a tool."""

from __future__ import annotations

from pywrapai_graph.application.inject_context import escape_context_text
from pywrapai_graph.application.tools import Tool
from pywrapai_graph.ports import BaseRetriever

__all__ = ["NO_RESULTS", "retrieval_tool"]

NO_RESULTS = "No relevant results found."


def retrieval_tool(
    retriever: BaseRetriever,
    name: str = "search_knowledge_base",
    description: str = "Search the knowledge base for relevant facts.",
    k: int | None = None,
) -> Tool:
    """A :class:`Tool` whose function retrieves for ``query`` and returns a numbered list::

    [1] Paris is the capital of France.
    [2] The Eiffel Tower is 330 metres tall and located in Paris.
    """

    def search(query: str) -> str:
        hits = retriever.retrieve(query, k=k)
        if not hits:
            return NO_RESULTS
        return "\n".join(
            f"[{i}] {escape_context_text(h.chunk.text)}" for i, h in enumerate(hits, 1)
        )

    search.__name__ = name
    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for."}},
            "required": ["query"],
        },
        fn=search,
    )
