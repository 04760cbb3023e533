"""Cohere Rerank through the official ``cohere`` SDK (``POST /v2/rerank``).

The SDK does the HTTP, the authentication and the retries (429 with ``Retry-After``, 5xx,
lost connections; ``max_retries``); this adapter sets a deadline on every request, turns the
SDK's errors into ours, and checks the reply before trusting it: one finite relevance score
for every document it sent, or a :class:`~pywrapai_graph.errors.ResponseFormatError` carrying
the raw body.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeGuard

from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._provider_errors import decoding, status_code_errors
from pywrapai_graph.adapters._transport import BodyRecorder
from pywrapai_graph.errors import ConfigurationError, MissingExtraError, ResponseFormatError
from pywrapai_graph.ports.rerank_provider import AsyncRerankProvider, RerankScores
from pywrapai_graph.redaction import scrubbed

try:
    import cohere
    import httpx
    from cohere.core.api_error import ApiError
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("cohere", "cohere") from exc

__all__ = ["DEFAULT_RERANK_TIMEOUT", "CohereRerank"]

#: seconds a rerank request may take (each attempt)
DEFAULT_RERANK_TIMEOUT = 60.0


def _message(exc: ApiError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(body) if body is not None else f"HTTP {exc.status_code}"


def _scores(data: Any, count: int) -> list[float]:
    """One finite score per document, in the order they were sent."""
    results = getattr(data, "results", None)
    if not isinstance(results, list) or len(results) != count:
        raise ResponseFormatError(
            f"cohere: the reply does not rank the {count} documents sent", raw=""
        )
    scores: list[float | None] = [None] * count
    for item in results:
        index = getattr(item, "index", None)
        score = getattr(item, "relevance_score", None)
        if not (isinstance(index, int) and 0 <= index < count and scores[index] is None):
            raise ResponseFormatError(
                f"cohere: a result names document {index!r} of {count}", raw=""
            )
        if not _finite(score):
            raise ResponseFormatError(
                f"cohere: document {index} has no finite relevance score", raw=""
            )
        scores[index] = float(score)
    return [s for s in scores if s is not None]


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _search_units(data: Any) -> int | None:
    billed = getattr(getattr(data, "meta", None), "billed_units", None)
    units = getattr(billed, "search_units", None)
    return math.ceil(units) if _finite(units) and units >= 0 else None


async def _close_async(client: tuple[Any, httpx.AsyncClient]) -> None:
    await client[1].aclose()


class CohereRerank(AsyncRerankProvider):
    """``client.v2.rerank`` with up to 1,000 documents per request (sync and async).

    Args:
        api_key: the key; ``CO_API_KEY`` otherwise (never shown in reprs or errors).
        base_url: another endpoint (a proxy, a private deployment, a test server).
        timeout: seconds each attempt may take (default 60).
        max_retries: retries of a 429, a 5xx or a lost connection (the SDK's default 2).

    Raises:
        ConfigurationError: no API key.
    """

    provider = "cohere"
    default_model = "rerank-v3.5"
    max_batch = 1000
    #: a server takes several requests at once
    concurrent_requests = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        key = api_key or os.environ.get("CO_API_KEY")
        if not key:
            raise ConfigurationError("Cohere needs an API key: set CO_API_KEY or pass api_key=")
        self._secret = key
        deadline = DEFAULT_RERANK_TIMEOUT if timeout is None else timeout
        options: dict[str, Any] = {"api_key": key, "max_retries": max_retries}
        if base_url is not None:
            options["base_url"] = base_url
        # the last reply's body, kept for an error that cannot decode it
        bodies = self._bodies = BodyRecorder()
        self._http = httpx.Client(timeout=deadline, event_hooks={"response": [bodies.hook]})
        weakref.finalize(self, self._http.close)  # its sockets close with the adapter
        self._client = cohere.ClientV2(**options, httpx_client=self._http)

        def build() -> tuple[Any, httpx.AsyncClient]:
            hooks = {"response": [bodies.ahook]}
            http = httpx.AsyncClient(timeout=deadline, event_hooks=hooks)
            return cohere.AsyncClientV2(**options, httpx_client=http), http

        self._aclients = PerLoop(build, _close_async)

    def __repr__(self) -> str:
        return "CohereRerank()"

    def _decoding(self) -> AbstractContextManager[None]:
        return decoding("cohere", self._bodies.body, [self._secret])

    @contextmanager
    def _errors(self) -> Iterator[None]:
        with status_code_errors(
            ApiError,
            "cohere",
            self._secret,
            "status_code",
            "body",
            headers=lambda exc: getattr(exc, "headers", None),
        ):
            try:
                yield
            except ApiError as exc:
                status = exc.status_code
                if status is not None and 200 <= status < 300:  # a body that is not JSON
                    raise ResponseFormatError(
                        "cohere: the reply is not JSON; its raw body is in the error's .raw "
                        "attribute",
                        raw="",
                    ) from scrubbed(exc, [self._secret])
                exc.body = _message(exc)
                raise

    def close(self) -> None:
        """Release the client's connections."""
        self._http.close()

    async def aclose(self) -> None:
        """Release the current event loop's async client."""
        await self._aclients.aclose()

    def score(self, query: str, texts: Sequence[str], model: str) -> RerankScores:
        with self._decoding(), self._errors():
            reply = self._client.rerank(model=model, query=query, documents=list(texts))
            return RerankScores(_scores(reply, len(texts)), _search_units(reply), model)

    async def ascore(self, query: str, texts: Sequence[str], model: str) -> RerankScores:
        client = self._aclients.get()[0]
        with self._decoding(), self._errors():
            reply = await client.rerank(model=model, query=query, documents=list(texts))
            return RerankScores(_scores(reply, len(texts)), _search_units(reply), model)
