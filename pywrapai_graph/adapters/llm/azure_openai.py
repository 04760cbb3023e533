"""Azure OpenAI through the official ``openai`` SDK (``AzureOpenAI`` / ``AsyncAzureOpenAI``).

The same Chat Completions wire format as OpenAI, so the OpenAI adapter's translation is
reused whole; what differs is the client: a deployment in the path
(``/openai/deployments/{deployment}/chat/completions``), an ``api-version`` query parameter,
and an ``api-key`` header or an Entra ID bearer token.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any

from pywrapai_graph.adapters._provider_errors import stainless_errors
from pywrapai_graph.adapters._provider_payload import drop_none
from pywrapai_graph.adapters.llm._platforms import TokenSource
from pywrapai_graph.adapters.llm.openai import OpenAIChatModel
from pywrapai_graph.errors import ConfigurationError, MissingExtraError
from pywrapai_graph.redaction import redact

try:
    import openai
    from openai.lib.azure import API_KEY_SENTINEL
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("openai", "openai") from exc

__all__ = ["AzureOpenAIChatModel"]

_PROVIDER = "azure-openai"
_NEEDS = (
    "Azure OpenAI needs an endpoint (azure_endpoint= or AZURE_OPENAI_ENDPOINT), an API version "
    "(api_version= or OPENAI_API_VERSION) and a credential (api_key= or AZURE_OPENAI_API_KEY, "
    "or azure_ad_token_provider= for Entra ID)"
)


class AzureOpenAIChatModel(OpenAIChatModel):
    """Chat Completions on an Azure OpenAI deployment.

    ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``, ``AZURE_OPENAI_AD_TOKEN`` and
    ``OPENAI_API_VERSION`` work as with the SDK; explicit arguments win.

    Args:
        model: the deployment name (it is the path's ``{deployment}``; required).
        api_key: the resource's key (sent as the ``api-key`` header).
        azure_endpoint: ``https://<resource>.openai.azure.com``.
        api_version: the ``api-version`` query parameter, e.g. ``2024-10-21``.
        azure_ad_token_provider: a callable returning an Entra ID token, called before each
            request (``azure.identity.get_bearer_token_provider(credential,
            "https://cognitiveservices.azure.com/.default")``), for keyless resources.
        base_url: the whole base URL instead of ``azure_endpoint`` (a gateway).
        timeout, max_retries, default_max_tokens: as for OpenAI.

    Raises:
        ConfigurationError: no deployment, endpoint, API version or credential; or both a
            key and a token provider.
    """

    provider_name = _PROVIDER

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        azure_ad_token_provider: Callable[[], str | Awaitable[str]] | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_max_tokens: int | None = None,
    ) -> None:
        if not model:
            raise ConfigurationError(
                "azure-openai: name the deployment to call, e.g. "
                "LLM(provider='azure-openai', model='my-gpt-4o-deployment')"
            )
        self._tokens = (
            None
            if azure_ad_token_provider is None
            else TokenSource(azure_ad_token_provider, _PROVIDER)
        )
        self._azure = drop_none(azure_endpoint=azure_endpoint, api_version=api_version)
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_max_tokens=default_max_tokens,
        )

    def _connect(self, options: dict[str, Any]) -> None:
        options = {**options, **self._azure}
        sync: Callable[..., openai.AzureOpenAI] = openai.AzureOpenAI
        asynchronous: Callable[..., openai.AsyncAzureOpenAI] = openai.AsyncAzureOpenAI
        if self._tokens is not None:
            sync = functools.partial(sync, azure_ad_token_provider=self._tokens)
            asynchronous = functools.partial(
                asynchronous, azure_ad_token_provider=self._tokens.acall
            )
        try:
            self._stainless_clients(sync, asynchronous, options)
        except (openai.OpenAIError, ValueError) as exc:
            reason = redact(str(exc), [options.get("api_key")])
            raise ConfigurationError(f"{_NEEDS}; the SDK says: {reason}") from None
        key = self._client.api_key
        # a static token from AZURE_OPENAI_AD_TOKEN is a secret as the key is
        static_token = getattr(self._client, "_azure_ad_token", None)
        self._secret = static_token if key == API_KEY_SENTINEL else key

    def _errors(self) -> AbstractContextManager[None]:
        token = None if self._tokens is None else self._tokens.last
        return stainless_errors(openai, _PROVIDER, self._secret or token)
