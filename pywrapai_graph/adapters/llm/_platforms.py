"""What the cloud-platform adapters (Azure OpenAI, Bedrock, Vertex AI) share: the failures of
the platforms' credential libraries as our errors (:class:`PlatformChatModel`, the base of the
Bedrock and Vertex AI adapters), and a token provider whose tokens are known to the redaction.

The SDKs resolve credentials inside the call (an Entra ID token provider, the AWS chain,
Google application-default credentials), so such a failure surfaces as the credential
library's own exception, not as one of the SDK's: each adapter's error boundary adds this one.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from pywrapai_graph.adapters.llm._base import SDKChatModel
from pywrapai_graph.errors import AuthenticationError, ConfigurationError, PyWrapAIError
from pywrapai_graph.redaction import redact, scrubbed

__all__ = ["PlatformChatModel", "TokenSource", "credential_errors", "is_credential_failure"]

#: what an SDK's own RuntimeError says when it could not authenticate a request
_CREDENTIAL_WORDS = ("credential", "token", "project_id")


def is_credential_failure(exc: BaseException) -> bool:
    """Whether a bare RuntimeError of a platform SDK reports missing credentials
    (``Could not resolve AWS credentials from session``, ``Could not resolve API token``)."""
    return isinstance(exc, RuntimeError) and any(w in str(exc) for w in _CREDENTIAL_WORDS)


@contextmanager
def credential_errors(
    provider: str,
    kinds: tuple[type[Exception], ...],
    secrets: Callable[[], Iterable[str | None]],
) -> Iterator[None]:
    """Raise the credential library's ``kinds`` (and an SDK's RuntimeError about credentials)
    as AuthenticationError: message redacted, cause scrubbed of ``secrets()``."""
    try:
        yield
    except PyWrapAIError:
        raise
    except Exception as exc:
        if not isinstance(exc, kinds) and not is_credential_failure(exc):
            raise
        known = list(secrets())
        raise AuthenticationError(
            f"{provider}: could not obtain credentials ({type(exc).__name__}): "
            f"{redact(str(exc), known)}",
            provider=provider,
        ) from scrubbed(exc, known)


class PlatformChatModel(SDKChatModel[Any, Any]):
    """A provider's adapter on a cloud platform (the provider's adapter follows this class in
    the bases): its clients built from the platform's options, its credential library's
    ``_credential_failures`` raised as AuthenticationError, and Google credentials' token
    (``_credentials``) masked as a secret.
    """

    #: the credential library's exceptions (botocore's, google-auth's)
    _credential_failures: ClassVar[tuple[type[Exception], ...]]
    #: google-auth credentials given to a Vertex AI adapter, whose token is a secret
    _credentials: Any = None

    def _platform_clients(
        self,
        sync: Callable[..., Any],
        asynchronous: Callable[..., Any],
        options: dict[str, Any],
        hint: str,
    ) -> None:
        """The SDK's platform clients; the SDK's complaint about missing configuration
        (a ValueError: no region) raised as ConfigurationError ending with ``hint``."""
        try:
            self._stainless_clients(sync, asynchronous, options)
        except ValueError as exc:
            reason = redact(str(exc), self._secrets())
            raise ConfigurationError(f"{self.provider_name}: {reason}; {hint}") from None

    def _secrets(self) -> list[str | None]:
        """What the credentials put on the wire (masked in every error)."""
        return [self._secret, getattr(self._credentials, "token", None)]

    @contextmanager
    def _errors(self) -> Iterator[None]:
        # super(): the provider's adapter, next in a platform adapter's bases
        sdk_errors = super()._errors()  # type: ignore[safe-super]
        failures = self._credential_failures
        with credential_errors(self.provider_name, failures, self._secrets), sdk_errors:
            yield


class TokenSource:
    """A caller's token provider (an Entra ID ``get_bearer_token_provider(...)``), called by
    the SDK before each request: it remembers the last token, so errors mask it, and turns
    the provider's failure into AuthenticationError (its message redacted, cause scrubbed).

    A synchronous provider serves both clients; one returning an awaitable serves the async
    client only.
    """

    def __init__(self, provider: Callable[[], str | Awaitable[str]], name: str) -> None:
        if not callable(provider):
            raise ConfigurationError(
                f"{name}: azure_ad_token_provider must be a callable returning a token"
            )
        self._provider = provider
        self._name = name
        #: the last token handed to the SDK (None before the first request)
        self.last: str | None = None

    def _checked(self, token: object) -> str:
        if not isinstance(token, str) or not token:
            raise AuthenticationError(
                f"{self._name}: azure_ad_token_provider returned {type(token).__name__}, "
                "not a non-empty string",
                provider=self._name,
            )
        self.last = token
        return token

    def _failed(self, exc: Exception) -> AuthenticationError:
        return AuthenticationError(
            f"{self._name}: azure_ad_token_provider failed ({type(exc).__name__}): "
            f"{redact(str(exc), [self.last])}",
            provider=self._name,
        )

    def __call__(self) -> str:
        try:
            token: Any = self._provider()
        except Exception as exc:
            raise self._failed(exc) from scrubbed(exc, [self.last])
        if inspect.isawaitable(token):
            if inspect.iscoroutine(token):
                token.close()  # never awaited: no "coroutine was never awaited" warning
            raise ConfigurationError(
                f"{self._name}: azure_ad_token_provider is async, so it serves achat() and "
                "astream() only; pass a synchronous one (azure.identity's "
                "get_bearer_token_provider) to serve both"
            )
        return self._checked(token)

    async def acall(self) -> str:
        """The async client's provider."""
        try:
            token: Any = self._provider()
            if inspect.isawaitable(token):
                token = await token
        except Exception as exc:
            raise self._failed(exc) from scrubbed(exc, [self.last])
        return self._checked(token)
