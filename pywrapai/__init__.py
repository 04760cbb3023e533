"""pywrapai: the engine names the reference imports (``from pywrapai import LLM, Message``).

A thin compatibility layer over :mod:`pywrapai_graph`; it contains no logic and loads lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pywrapai_graph

__all__ = [
    "LLM",
    "CallRecord",
    "Embedder",
    "LLMResponse",
    "Message",
    "ModelPrice",
    "PriceTable",
    "Role",
    "TokenTracker",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
]

if TYPE_CHECKING:
    from pywrapai_graph import (
        LLM,
        CallRecord,
        Embedder,
        LLMResponse,
        Message,
        ModelPrice,
        PriceTable,
        Role,
        TokenTracker,
        TokenUsage,
        ToolCall,
        ToolResult,
    )


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'pywrapai' has no attribute {name!r}")
    return getattr(pywrapai_graph, name)


def __dir__() -> list[str]:
    return __all__
