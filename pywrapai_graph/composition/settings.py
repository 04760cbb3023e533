"""Settings: the whole configuration, validated up front.

Sources, highest priority first: a dict passed in code, then environment variables with
the ``PYWRAPAI_`` prefix, nested with ``__`` (``PYWRAPAI_STORE__BACKEND=pgvector``,
``PYWRAPAI_LLM__PROVIDER=openai``), then a YAML file such as ``pywrapai.yaml``, then
defaults. Any problem — an unknown backend, a missing required field, an unknown key — is
one :class:`~pywrapai_graph.errors.ConfigurationError` naming every offending key.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from pywrapai_graph.composition.backends import BACKENDS, backend_entry, default_store_path
from pywrapai_graph.composition.cache_settings import ResponseCacheSettings
from pywrapai_graph.composition.config_files import read_yaml
from pywrapai_graph.composition.conversation_settings import ConversationSettings
from pywrapai_graph.composition.endpoint_settings import EndpointFields
from pywrapai_graph.composition.environment import environment_values, with_environment
from pywrapai_graph.composition.limit_settings import LimitsSection
from pywrapai_graph.composition.mcp_settings import MCPSettings
from pywrapai_graph.composition.providers import (
    CHAT_PROVIDERS,
    EMBEDDING_PROVIDERS,
    RERANK_PROVIDERS,
)
from pywrapai_graph.composition.run_store_settings import RunStoreSettings
from pywrapai_graph.composition.settings_responses import OpenAIAPISetting
from pywrapai_graph.domain.agent import DEFAULT_MAX_TOOL_RESULT_BYTES, DEFAULT_TOOL_TIMEOUT_S
from pywrapai_graph.domain.generation import GenerationParams
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError
from pywrapai_graph.ports.store_inputs import lexical_refusal
from pywrapai_graph.redaction import redact

__all__ = [
    "BACKEND_KEYS",
    "DEFAULT_CONFIG_FILE",
    "Backend",
    "EmbedderSettings",
    "FallbackSettings",
    "LLMSettings",
    "RerankerSettings",
    "Settings",
    "Source",
    "StoreSettings",
    "default_store_path",
    "load_settings",
]

DEFAULT_CONFIG_FILE = "pywrapai.yaml"
#: A ``store.backend`` name: a key of :data:`~pywrapai_graph.composition.backends.BACKENDS`.
Backend = str


def _known(value: str, what: str, table: Mapping[str, object]) -> str:
    """``value`` when it names an entry of ``table``, else InvalidArgumentError listing them."""
    if value not in table:
        raise InvalidArgumentError(f"unknown {what} {value!r}; known: {', '.join(table)}")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # URLs may carry credentials (http://user:pw@host, ?token=): shown redacted
        for name, value in super().__repr_args__():
            yield name, redact(value) if isinstance(value, str) else value


class _ChatModelSection(OpenAIAPISetting, EndpointFields, _Section):
    """Which chat model, and how to reach it."""

    provider: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    # Anthropic's cache_control breakpoints (OpenAI and Gemini cache prompts on their own)
    prompt_cache: Literal["auto", "off"] | None = None

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        return value if value is None else _known(value, "LLM provider", CHAT_PROVIDERS)

    @model_validator(mode="after")
    def _cache_needs_anthropic(self) -> Self:
        if self.prompt_cache is not None and not str(self.provider).startswith("anthropic"):
            raise InvalidArgumentError(
                f"prompt_cache applies to provider 'anthropic' only (got provider "
                f"{self.provider!r}); OpenAI and Gemini cache prompts on their own"
            )
        return self


class FallbackSettings(_ChatModelSection):
    """One fallback model of ``llm.fallbacks``: asked, in order, when the models before it
    fail with a rate limit, a timeout, or an unreachable or failing provider."""

    provider: str


class LLMSettings(_ChatModelSection):
    """The chat provider; ``provider: null`` means none (``ask`` then shows the messages)."""

    system_prompt: str | None = None
    # default generation parameters of every call (a call's own arguments win)
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: list[str] | None = None
    seed: int | None = None
    # the models asked, in order, when the provider fails in a way another may not
    fallbacks: list[FallbackSettings] = Field(default_factory=list)
    # a response cache: in this process, or shared by every process through PostgreSQL
    cache: ResponseCacheSettings | None = None

    def generation(self) -> GenerationParams:
        """These defaults as :class:`GenerationParams`."""
        names = {f.name for f in dataclasses.fields(GenerationParams)}
        return GenerationParams(**self.model_dump(include=names))


class EmbedderSettings(_Section):
    """The embedding provider; "local" is offline and semantic, "hashing" offline and lexical."""

    provider: str = "hashing"
    model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    dimension: int = Field(default=384, gt=0, description="hashing provider only")
    model_dir: str | None = Field(default=None, description="local provider only")
    threads: int | None = Field(
        default=None, ge=1, description="local provider only; default: half the usable CPUs"
    )

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        return _known(value, "embedding provider", EMBEDDING_PROVIDERS)


class StoreSettings(_Section):
    """Which vector store, and where it lives."""

    backend: Backend = "sqlite"
    path: str | None = None
    table: str = "vector_chunks"
    collection: str = "pywrapai"
    url: str | None = None
    dsn: SecretStr | None = None
    api_key: SecretStr | None = None
    dimension: int | None = Field(default=None, gt=0)
    lock_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="faiss only: seconds a write waits for another process's (StoreBusyError)",
    )
    # PostgreSQL (pgvector) only
    pool_size: int = Field(default=4, ge=1, description="server connections at most")
    pool_timeout_ms: int | None = Field(
        default=5_000, gt=0, description="wait for a free connection, then StoreBusyError"
    )
    statement_timeout_ms: int | None = Field(
        default=30_000,
        gt=0,
        description="the server cancels a longer statement; the client closes a silent "
        "connection 2 s later (StoreTimeoutError); null: the server's default, no deadline",
    )
    create_schema: bool = Field(
        default=True, description="false: a DML-only role; run `pywrapai-graph store init` once"
    )
    # Chroma server only
    request_timeout_s: float | None = Field(
        default=30.0,
        gt=0,
        description="chroma server only: seconds each request may take (StoreTimeoutError); "
        "null: no deadline",
    )
    # Qdrant server only (a cluster; README "A Qdrant cluster"); null: Qdrant's default
    shard_number: int | None = Field(default=None, gt=0)
    replication_factor: int | None = Field(default=None, gt=0)
    write_consistency_factor: int | None = Field(default=None, gt=0)
    read_consistency: int | Literal["majority", "quorum", "all"] | None = None

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return _known(value, "backend", BACKENDS)

    @model_validator(mode="after")
    def _required_per_backend(self) -> StoreSettings:
        entry = backend_entry(self.backend)
        try:
            entry.settings.model_validate(self.model_dump(exclude_none=True))
        except ValidationError as exc:
            problems = [
                f"store.{'.'.join(map(str, e['loc']))} is required for backend {entry.name!r}"
                if e["type"] == "missing"
                else str(e["msg"]).removeprefix("Value error, ")
                for e in exc.errors()
            ]
            raise InvalidArgumentError("; ".join(problems)) from None
        return self

    def location(self) -> str:
        """Where the data lives, for humans (no secrets)."""
        if self.backend == "pgvector":
            return f"PostgreSQL table {self.table!r}"
        if self.backend == "memory":
            return "process memory"
        return redact(self.url or self.path or default_store_path(self.backend))


class RerankerSettings(_Section):
    """A second retrieval stage: "cohere" (hosted) or "local" (an ONNX cross-encoder)."""

    provider: str
    model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    model_dir: str | None = Field(default=None, description="local provider only (required)")
    threads: int = Field(default=1, ge=1, description="local provider only")
    max_length: int | None = Field(default=None, ge=4, description="local provider only")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        return _known(value, "rerank provider", RERANK_PROVIDERS)

    @model_validator(mode="after")
    def _local_needs_a_folder(self) -> RerankerSettings:
        if self.provider == "local" and not self.model_dir:
            raise InvalidArgumentError(
                "retriever.reranker.model_dir is required for the local reranker: a folder "
                "holding model.onnx and tokenizer.json (nothing is downloaded)"
            )
        return self


class RetrieverSettings(_Section):
    """Retrieval defaults: dense (embeddings), lexical (BM25) or hybrid (both, fused), then
    optionally reranked (``reranker``; none by default)."""

    k: int = Field(default=4, ge=1)
    min_score: float = Field(default=0.0, ge=-1.0, le=1.0)
    mode: Literal["dense", "lexical", "hybrid"] = "dense"
    k1: float = Field(default=1.2, ge=0.0)
    b: float = Field(default=0.75, ge=0.0, le=1.0)
    fusion: Literal["rescored", "rrf", "weighted"] = "rescored"
    rrf_k: int = Field(default=60, ge=0)
    #: unset: the fusion's default (rescored 0.6 / 0.4, rrf and weighted 1 / 1)
    dense_weight: float | None = Field(default=None, ge=0.0)
    lexical_weight: float | None = Field(default=None, ge=0.0)
    candidates: int = Field(default=100, ge=1)
    reranker: RerankerSettings | None = None
    rerank_candidates: int = Field(
        default=50, ge=1, description="hits the reranker re-orders (at least k are)"
    )

    @field_validator("reranker", mode="before")
    @classmethod
    def _provider_name(cls, value: Any) -> Any:
        return {"provider": value} if isinstance(value, str) else value


class ChunkerSettings(_Section):
    """Chunking of ingested files."""

    chunk_size: int = Field(default=500, gt=10)
    overlap: int = Field(default=50, ge=0)

    @model_validator(mode="after")
    def _overlap_smaller(self) -> ChunkerSettings:
        if self.overlap >= self.chunk_size:
            raise InvalidArgumentError("chunker.overlap must be smaller than chunker.chunk_size")
        return self


class PromptSettings(_Section):
    """Versioned system prompts."""

    dir: str = "system_prompts_registry"
    file: str | None = None


class AgentSettings(_Section):
    """Agent loop defaults."""

    max_turns: int = Field(default=10, ge=1)
    tool_error_policy: Literal["return_to_model", "raise", "skip"] = "return_to_model"
    max_cost_usd: float | None = Field(default=None, ge=0)
    tool_timeout_s: float | None = Field(default=DEFAULT_TOOL_TIMEOUT_S, gt=0)
    max_tool_result_bytes: int | None = Field(default=DEFAULT_MAX_TOOL_RESULT_BYTES, ge=1)
    run_store: RunStoreSettings = RunStoreSettings()


class Settings(BaseModel):
    """Everything the container needs.

    ``Settings(**values)`` puts ``values`` on top of the ``PYWRAPAI_*`` environment (as the
    pydantic-settings class it replaces did; see
    :mod:`~pywrapai_graph.composition.environment`).
    """

    model_config = ConfigDict(extra="forbid", validate_default=True, arbitrary_types_allowed=True)

    llm: LLMSettings = LLMSettings()
    embedder: EmbedderSettings = EmbedderSettings()
    store: StoreSettings = StoreSettings()
    retriever: RetrieverSettings = RetrieverSettings()
    chunker: ChunkerSettings = ChunkerSettings()
    prompts: PromptSettings = PromptSettings()
    agent: AgentSettings = AgentSettings()
    mcp: MCPSettings = MCPSettings()
    conversations: ConversationSettings = ConversationSettings()
    #: client-side limits per provider (``limits: {openai: {requests_per_minute: 500}}``)
    limits: LimitsSection = LimitsSection()
    rag_k: int = Field(default=4, ge=1)
    embed_concurrency: int = Field(
        default=4,
        ge=0,
        description="ingest: embedding requests at once to a server-side embedder "
        "(openai, gemini, ollama); 0 embeds and writes in turn",
    )

    def __init__(self, **values: Any) -> None:
        super().__init__(**with_environment(type(self), values))

    @model_validator(mode="after")
    def _mode_on_backend(self) -> Settings:
        """Refuse a lexical or hybrid ``retriever.mode`` on a dense-only backend up front
        (before a store is built or a document ingested)."""
        backend, mode = self.store.backend, self.retriever.mode
        if mode != "dense" and not backend_entry(backend).lexical:
            raise lexical_refusal(f"store.backend {backend!r}", f"retriever.mode {mode!r}")
        return self


def _describe(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {key}: {err['msg']}")
    return "invalid configuration:\n" + "\n".join(lines)


#: ``PYWRAPAI_*`` variables that are not settings: read elsewhere, never reported as unknown
OTHER_VARIABLES = frozenset(
    {"PYWRAPAI_OFFLOAD_THREADS", "PYWRAPAI_OFFLOAD_QUEUE", "PYWRAPAI_PROVIDER", "PYWRAPAI_MODEL"}
)
_TEST_VARIABLES = "PYWRAPAI_TEST_"  # the test suite's server URLs


_CLUSTER = ("shard_number", "replication_factor", "write_consistency_factor", "read_consistency")
#: The store keys each backend reads. Locations (path, url, dsn, api_key) are never carried
#: from one backend to another; the other keys are when the new backend reads them.
BACKEND_KEYS: dict[str, frozenset[str]] = {
    "memory": frozenset({"dimension"}),
    "sqlite": frozenset({"path", "table"}),
    "faiss": frozenset({"path", "dimension"}),
    "chroma": frozenset({"path", "url", "collection"}),
    "pgvector": frozenset({"dsn", "table", "dimension"}),
    "qdrant": frozenset({"path", "url", "api_key", "collection", "dimension", *_CLUSTER}),
    "milvus": frozenset({"path", "url", "api_key", "collection", "dimension"}),
}
_LOCATION_KEYS = frozenset({"path", "url", "dsn", "api_key"})


def _store_for(base: Mapping[str, Any], backend: Any) -> dict[str, Any]:
    """What of a lower layer's store section survives a switch to ``backend``."""
    if base.get("backend", "sqlite") == backend or backend not in BACKEND_KEYS:
        return dict(base)
    wanted = BACKEND_KEYS[backend] - _LOCATION_KEYS
    return {k: v for k, v in base.items() if k in wanted}


def _merge(
    base: dict[str, Any], override: Mapping[str, Any], *, top: bool = True
) -> dict[str, Any]:
    """``override`` on top of ``base``; a layer that changes ``store.backend`` drops the
    lower layers' settings of the previous backend (its path, URL, DSN...)."""
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            if top and key == "store" and "backend" in value:
                current = _store_for(current, value["backend"])
            out[key] = _merge(current, value, top=False)
        else:
            out[key] = value
    return out


Source = Mapping[str, Any] | str | os.PathLike[str]


def _check_environment() -> None:
    """Unknown ``PYWRAPAI_*`` variables are errors, as unknown YAML keys are (a typo such as
    ``PYWRAPAI_STORE_BACKEND`` would otherwise be ignored without a word).

    Raises:
        ConfigurationError: naming every unknown variable and the known sections.
    """
    sections = set(Settings.model_fields)
    unknown = sorted(
        name
        for name in os.environ
        if name.upper().startswith("PYWRAPAI_")
        and name.upper() not in OTHER_VARIABLES
        and not name.upper().startswith(_TEST_VARIABLES)
        and name[len("PYWRAPAI_") :].split("__")[0].lower() not in sections
    )
    if unknown:
        raise ConfigurationError(
            f"unknown environment variable{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)}: PYWRAPAI_ variables name a setting as "
            f"PYWRAPAI_<SECTION>__<KEY>, sections: {', '.join(sorted(sections))}"
        )


def load_settings(source: Source | Sequence[Source] | None = None) -> Settings:
    """Validated settings from a dict, a YAML file path, or (None) the environment alone.

    A sequence of sources is a stack of layers, later ones on top (``["base.yaml",
    "prod.yaml"]``). With YAML files the ``PYWRAPAI_*`` environment is the top layer. A layer
    that changes ``store.backend`` drops what the layers below set for the previous backend
    only — its path, URL or DSN — so each backend falls back to its own default location
    (``PYWRAPAI_STORE__BACKEND=faiss`` over a file that configures SQLite just works).

    Raises:
        ConfigurationError: unreadable or malformed file, or invalid values (every
            offending key is named).
    """
    layers = [source] if isinstance(source, Mapping | str | os.PathLike) else list(source or [])
    data: dict[str, Any] = {}
    for layer in layers:
        data = _merge(data, layer if isinstance(layer, Mapping) else read_yaml(Path(layer)))
    if not layers or any(not isinstance(layer, Mapping) for layer in layers):
        # the environment overrides files (a dict passed in code overrides the environment)
        _check_environment()
        data = _merge(data, environment_values(Settings))
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigurationError(_describe(exc)) from None
