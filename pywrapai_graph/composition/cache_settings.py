"""``llm.cache``: the response cache of the configured LLM, in this process or shared."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from pywrapai_graph.ports import ResponseCache

__all__ = ["ResponseCacheSettings"]


class ResponseCacheSettings(BaseModel):
    """``llm.cache: {}`` keeps ``max_entries`` responses in this process (LRU);
    ``llm.cache: {shared: <PostgreSQL DSN>, ttl_s: 3600}`` keeps them in that database for
    every process, each served until ``ttl_s`` after it was written
    (``PYWRAPAI_LLM__CACHE='{"shared": "postgresql://..."}'``)."""

    model_config = ConfigDict(extra="forbid")

    shared: SecretStr | None = None
    ttl_s: float = Field(default=3600.0, gt=0)
    max_entries: int = Field(default=1024, gt=0)

    def cache(self) -> ResponseCache:
        """The cache these settings describe."""
        if self.shared is None:
            from pywrapai_graph.adapters.cache.lru import LRUResponseCache

            return LRUResponseCache(self.max_entries)
        from pywrapai_graph.adapters.shared.response_cache import PostgresResponseCache

        return PostgresResponseCache(self.shared.get_secret_value(), ttl_s=self.ttl_s)
