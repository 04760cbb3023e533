"""pywrapai-graph: assemble the complete message list and call the LLM.

Every public name of the library reference is importable from here. Names load lazily
(PEP 562): ``import pywrapai_graph`` imports no SDK, no database driver and not even numpy;
an adapter's module is imported the first time its name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # core
    "GraphLLM": "pywrapai_graph.composition.graph_llm",
    "LLM": "pywrapai_graph.composition.llm",
    "Embedder": "pywrapai_graph.composition.embedder",
    "PromptRegistry": "pywrapai_graph.adapters.prompts.filesystem",
    "LRUResponseCache": "pywrapai_graph.adapters.cache.lru",
    "AssembleMessages": "pywrapai_graph.application.assemble_messages",
    "TokenTracker": "pywrapai_graph.application.token_tracker",
    "PriceTable": "pywrapai_graph.application.pricing",
    "ModelPrice": "pywrapai_graph.application.pricing",
    "cost_scope": "pywrapai_graph.application.observability.scope",
    "CostScope": "pywrapai_graph.application.observability.scope",
    "CostTotals": "pywrapai_graph.domain",
    # tools
    "Tool": "pywrapai_graph.application.tools",
    "MCPToolServer": "pywrapai_graph.composition.mcp_servers",
    "ToolRegistry": "pywrapai_graph.application.tools",
    "tool": "pywrapai_graph.application.tools",
    # domain values
    "Message": "pywrapai_graph.domain",
    "Role": "pywrapai_graph.domain",
    "ToolCall": "pywrapai_graph.domain",
    "ToolResult": "pywrapai_graph.domain",
    "TextPart": "pywrapai_graph.domain",
    "ImagePart": "pywrapai_graph.domain",
    "DocumentPart": "pywrapai_graph.domain",
    "ReasoningPart": "pywrapai_graph.domain",
    "LLMResponse": "pywrapai_graph.domain",
    "TokenUsage": "pywrapai_graph.domain",
    "CallRecord": "pywrapai_graph.domain",
    "Document": "pywrapai_graph.domain",
    "Chunk": "pywrapai_graph.domain",
    "ScoredChunk": "pywrapai_graph.domain",
    # agent
    "Agent": "pywrapai_graph.application.run_agent",
    "AgentConfig": "pywrapai_graph.domain.agent",
    "AgentStep": "pywrapai_graph.domain.agent",
    "AgentResult": "pywrapai_graph.domain.agent",
    "AgentMaxTurnsError": "pywrapai_graph.domain.agent",
    "AgentBudgetExceededError": "pywrapai_graph.domain.agent",
    "AgentEvent": "pywrapai_graph.domain.agent_events",
    "TextDelta": "pywrapai_graph.domain.agent_events",
    "ToolCallDelta": "pywrapai_graph.domain",
    "ToolCallStarted": "pywrapai_graph.domain.agent_events",
    "ToolCallResult": "pywrapai_graph.domain.agent_events",
    "StepEnded": "pywrapai_graph.domain.agent_events",
    "FinalAnswer": "pywrapai_graph.domain.agent_events",
    "ApprovalRequired": "pywrapai_graph.domain.agent_events",
    "ToolTiming": "pywrapai_graph.domain.agent",
    "AgentRunState": "pywrapai_graph.domain.agent_state",
    "PendingCall": "pywrapai_graph.domain.agent_state",
    "ApprovalsError": "pywrapai_graph.domain.agent_state",
    "RunConflictError": "pywrapai_graph.domain.agent_state",
    "RunNotFoundError": "pywrapai_graph.domain.agent_state",
    "RunStateError": "pywrapai_graph.domain.agent_state",
    "idempotency_key": "pywrapai_graph.application.tools.execution",
    "RunStore": "pywrapai_graph.ports.run_store",
    "InMemoryRunStore": "pywrapai_graph.adapters.shared.runs.memory",
    "SQLiteRunStore": "pywrapai_graph.adapters.shared.runs.sqlite",
    "PostgresRunStore": "pywrapai_graph.adapters.shared.runs.postgres",
    # RAG
    "Chunker": "pywrapai_graph.application.chunker",
    "FeatureHashingEmbedder": "pywrapai_graph.adapters.embedders.hashing_embedder",
    "HashingEmbedder": "pywrapai_graph.adapters.embedders.hashing_embedder",  # deprecated
    "BaseVectorStore": "pywrapai_graph.ports.vector_store",
    "InMemoryVectorStore": "pywrapai_graph.adapters.vectorstores.memory.store",
    "SQLiteVectorStore": "pywrapai_graph.adapters.vectorstores.sqlite.store",
    "FAISSVectorStore": "pywrapai_graph.adapters.vectorstores.faiss.store",
    "ChromaVectorStore": "pywrapai_graph.adapters.vectorstores.chroma.store",
    "PGVectorStore": "pywrapai_graph.adapters.vectorstores.postgres.store",
    "QdrantVectorStore": "pywrapai_graph.adapters.vectorstores.qdrant.store",
    "MilvusVectorStore": "pywrapai_graph.adapters.vectorstores.milvus.store",
    # retrieval
    "BaseRetriever": "pywrapai_graph.ports.retriever",
    "VectorRetriever": "pywrapai_graph.application.vector_retriever",
    "retrieval_tool": "pywrapai_graph.application.retrieval_tool",
    "evaluate_retrieval": "pywrapai_graph.application.evaluate_retrieval",
    "load_beir": "pywrapai_graph.adapters.sources.beir",
    "ScopedRetriever": "pywrapai_graph.application.scoped_retriever",
    "Reranker": "pywrapai_graph.ports.reranker",
    "RerankModel": "pywrapai_graph.composition.reranker",
    # serving
    "ChatStream": "pywrapai_graph.application.chat_stream",
    "AsyncChatStream": "pywrapai_graph.application.chat_stream",
    "GenerationParams": "pywrapai_graph.domain",
    # conversations
    "ConversationStore": "pywrapai_graph.ports.conversation_store",
    "InMemoryConversationStore": "pywrapai_graph.adapters.conversations.memory",
    "SQLiteConversationStore": "pywrapai_graph.adapters.conversations.sqlite",
    "PostgresConversationStore": "pywrapai_graph.adapters.conversations.postgres",
    "HistoryWindow": "pywrapai_graph.application.history_window",
}

#: old names that still work and warn (``DeprecationWarning``) when imported
_DEPRECATED = frozenset({"HashingEmbedder"})

__all__ = [
    "LLM",
    "Agent",
    "AgentBudgetExceededError",
    "AgentConfig",
    "AgentEvent",
    "AgentMaxTurnsError",
    "AgentResult",
    "AgentRunState",
    "AgentStep",
    "ApprovalRequired",
    "ApprovalsError",
    "AssembleMessages",
    "AsyncChatStream",
    "BaseRetriever",
    "BaseVectorStore",
    "CallRecord",
    "ChatStream",
    "ChromaVectorStore",
    "Chunk",
    "Chunker",
    "ConversationStore",
    "CostScope",
    "CostTotals",
    "Document",
    "DocumentPart",
    "Embedder",
    "FAISSVectorStore",
    "FeatureHashingEmbedder",
    "FinalAnswer",
    "GenerationParams",
    "GraphLLM",
    "HistoryWindow",
    "ImagePart",
    "InMemoryConversationStore",
    "InMemoryRunStore",
    "InMemoryVectorStore",
    "LLMResponse",
    "LRUResponseCache",
    "MCPToolServer",
    "Message",
    "MilvusVectorStore",
    "ModelPrice",
    "PGVectorStore",
    "PendingCall",
    "PostgresConversationStore",
    "PostgresRunStore",
    "PriceTable",
    "PromptRegistry",
    "QdrantVectorStore",
    "ReasoningPart",
    "RerankModel",
    "Reranker",
    "Role",
    "RunConflictError",
    "RunNotFoundError",
    "RunStateError",
    "RunStore",
    "SQLiteConversationStore",
    "SQLiteRunStore",
    "SQLiteVectorStore",
    "ScopedRetriever",
    "ScoredChunk",
    "StepEnded",
    "TextDelta",
    "TextPart",
    "TokenTracker",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallResult",
    "ToolCallStarted",
    "ToolRegistry",
    "ToolResult",
    "ToolTiming",
    "VectorRetriever",
    "__version__",
    "cost_scope",
    "evaluate_retrieval",
    "idempotency_key",
    "load_beir",
    "retrieval_tool",
    "tool",
]

if TYPE_CHECKING:
    from pywrapai_graph.adapters.cache.lru import LRUResponseCache
    from pywrapai_graph.adapters.conversations.memory import InMemoryConversationStore
    from pywrapai_graph.adapters.conversations.postgres import PostgresConversationStore
    from pywrapai_graph.adapters.conversations.sqlite import SQLiteConversationStore
    from pywrapai_graph.adapters.embedders.hashing_embedder import (
        FeatureHashingEmbedder,
    )
    from pywrapai_graph.adapters.embedders.hashing_embedder import (
        HashingEmbedder as HashingEmbedder,  # deprecated name (typed for old code)
    )
    from pywrapai_graph.adapters.prompts.filesystem import PromptRegistry
    from pywrapai_graph.adapters.shared.runs.memory import InMemoryRunStore
    from pywrapai_graph.adapters.shared.runs.postgres import PostgresRunStore
    from pywrapai_graph.adapters.shared.runs.sqlite import SQLiteRunStore
    from pywrapai_graph.adapters.sources.beir import load_beir
    from pywrapai_graph.adapters.vectorstores.chroma.store import ChromaVectorStore
    from pywrapai_graph.adapters.vectorstores.faiss.store import FAISSVectorStore
    from pywrapai_graph.adapters.vectorstores.memory.store import InMemoryVectorStore
    from pywrapai_graph.adapters.vectorstores.milvus.store import MilvusVectorStore
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore
    from pywrapai_graph.adapters.vectorstores.qdrant.store import QdrantVectorStore
    from pywrapai_graph.adapters.vectorstores.sqlite.store import SQLiteVectorStore
    from pywrapai_graph.application.assemble_messages import AssembleMessages
    from pywrapai_graph.application.chat_stream import AsyncChatStream, ChatStream
    from pywrapai_graph.application.chunker import Chunker
    from pywrapai_graph.application.evaluate_retrieval import evaluate_retrieval
    from pywrapai_graph.application.history_window import HistoryWindow
    from pywrapai_graph.application.observability.scope import CostScope, cost_scope
    from pywrapai_graph.application.pricing import ModelPrice, PriceTable
    from pywrapai_graph.application.retrieval_tool import retrieval_tool
    from pywrapai_graph.application.run_agent import Agent
    from pywrapai_graph.application.scoped_retriever import ScopedRetriever
    from pywrapai_graph.application.token_tracker import TokenTracker
    from pywrapai_graph.application.tools import Tool, ToolRegistry, tool
    from pywrapai_graph.application.tools.execution import idempotency_key
    from pywrapai_graph.application.vector_retriever import VectorRetriever
    from pywrapai_graph.composition.embedder import Embedder
    from pywrapai_graph.composition.graph_llm import GraphLLM
    from pywrapai_graph.composition.llm import LLM
    from pywrapai_graph.composition.mcp_servers import MCPToolServer
    from pywrapai_graph.composition.reranker import RerankModel
    from pywrapai_graph.domain import (
        CallRecord,
        Chunk,
        CostTotals,
        Document,
        DocumentPart,
        GenerationParams,
        ImagePart,
        LLMResponse,
        Message,
        ReasoningPart,
        Role,
        ScoredChunk,
        TextPart,
        TokenUsage,
        ToolCall,
        ToolCallDelta,
        ToolResult,
    )
    from pywrapai_graph.domain.agent import (
        AgentBudgetExceededError,
        AgentConfig,
        AgentMaxTurnsError,
        AgentResult,
        AgentStep,
        ToolTiming,
    )
    from pywrapai_graph.domain.agent_events import (
        AgentEvent,
        ApprovalRequired,
        FinalAnswer,
        StepEnded,
        TextDelta,
        ToolCallResult,
        ToolCallStarted,
    )
    from pywrapai_graph.domain.agent_state import (
        AgentRunState,
        ApprovalsError,
        PendingCall,
        RunConflictError,
        RunNotFoundError,
        RunStateError,
    )
    from pywrapai_graph.ports.conversation_store import ConversationStore
    from pywrapai_graph.ports.reranker import Reranker
    from pywrapai_graph.ports.retriever import BaseRetriever
    from pywrapai_graph.ports.run_store import RunStore
    from pywrapai_graph.ports.vector_store import BaseVectorStore


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'pywrapai_graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    if name not in _DEPRECATED:  # a deprecated name warns at every import
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
