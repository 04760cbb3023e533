"""The one exception tree of pywrapai-graph.

Two families, so callers can tell a bug in their own code from a failure of the world:

* :class:`UsageError` — misuse: a bad argument, an unknown provider or backend, a missing
  optional extra, a hostile name. Raised early, before any side effect, with a message that
  says what to do. Each also subclasses the builtin the reference promises (``ValueError``,
  ``TypeError``, ``ImportError``, ``FileNotFoundError``) so ``except ValueError`` keeps working.
* :class:`RuntimeFailure` — something outside the caller's control failed: the provider
  refused, timed out or answered garbage. The original exception is kept as ``__cause__``.

Messages never contain API keys or file contents (:class:`PyWrapAIError` redacts its text
arguments), and an error raised from an SDK or driver error keeps a redacted copy of it as
``__cause__``. The whole tree (builtins each class also derives from in parentheses; the
agent's errors live in :mod:`pywrapai_graph.domain.agent` and ``domain.agent_state``)::

    PyWrapAIError
    ├── RuntimeFailure
    │   ├── AgentBudgetExceededError
    │   ├── AgentMaxTurnsError
    │   ├── OverloadedError
    │   ├── ProviderError
    │   │   ├── AuthenticationError
    │   │   ├── BadRequestError
    │   │   ├── IncompleteStreamError
    │   │   ├── ProviderTimeoutError (TimeoutError, OSError)
    │   │   ├── ProviderUnavailableError
    │   │   └── RateLimitError
    │   │       └── LimitWaitError
    │   ├── ResponseFormatError (ValueError)
    │   │   └── StructuredOutputError
    │   ├── RunConflictError
    │   ├── ToolExecutionError
    │   │   ├── RemoteToolError
    │   │   ├── ToolResultTooLargeError
    │   │   ├── ToolServerError
    │   │   └── ToolTimeoutError (TimeoutError, OSError)
    │   └── VectorStoreError
    │       ├── StorageFullError
    │       ├── StoreBusyError
    │       ├── StoreDamagedError
    │       └── StoreTimeoutError (TimeoutError, OSError)
    └── UsageError
        ├── ArgumentTypeError (TypeError)
        ├── ConfigurationError (ValueError)
        │   ├── EmbedderMismatchError
        │   └── UnknownProviderError
        ├── ContextWindowError (ValueError)
        ├── InputNotFoundError (FileNotFoundError, OSError)
        ├── InvalidArgumentError (ValueError)
        │   ├── ApprovalsError
        │   ├── RunNotFoundError
        │   └── RunStateError
        ├── InvalidStateError (RuntimeError)
        ├── MissingExtraError (ImportError)
        ├── PromptNotFoundError (FileNotFoundError, OSError)
        ├── ScopeError (ValueError)
        ├── StreamNotFinishedError (RuntimeError)
        ├── ToolArgumentsError (TypeError)
        ├── UnknownToolError (KeyError, LookupError)
        ├── UnsafePromptNameError (ValueError)
        └── UnsupportedOperationError (NotImplementedError, RuntimeError)
            └── UnsupportedContentError

Any error raised while an agent run was under way carries ``partial`` (the run so far).
"""

from __future__ import annotations

from typing import Any

from pywrapai_graph.redaction import redact

__all__ = [
    "ArgumentTypeError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ContextWindowError",
    "EmbedderMismatchError",
    "IncompleteStreamError",
    "InputNotFoundError",
    "InvalidArgumentError",
    "InvalidStateError",
    "LimitWaitError",
    "MissingExtraError",
    "OverloadedError",
    "PromptNotFoundError",
    "ProviderError",
    "ProviderTimeoutError",
    "ProviderUnavailableError",
    "PyWrapAIError",
    "RateLimitError",
    "RemoteToolError",
    "ResponseFormatError",
    "RuntimeFailure",
    "ScopeError",
    "StorageFullError",
    "StoreBusyError",
    "StoreDamagedError",
    "StoreTimeoutError",
    "StreamNotFinishedError",
    "StructuredOutputError",
    "ToolArgumentsError",
    "ToolExecutionError",
    "ToolResultTooLargeError",
    "ToolServerError",
    "ToolTimeoutError",
    "UnknownProviderError",
    "UnknownToolError",
    "UnsafePromptNameError",
    "UnsupportedContentError",
    "UnsupportedOperationError",
    "UsageError",
    "VectorStoreError",
]


class PyWrapAIError(Exception):
    """Base of every exception raised by pywrapai-graph.

    Text arguments are redacted on the way in (:func:`~pywrapai_graph.redaction.redact`):
    a DSN, URL or key that slips into a message is masked wherever the error is shown.
    """

    #: the run so far (an ``AgentResult``: steps, messages, usage and cost) when this error
    #: interrupted an agent run; None otherwise
    partial: Any = None
    #: whether the message quotes content (a tool's error text, a model's argument values):
    #: with content capture off, spans record only the error's type
    quotes_content: bool = False

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


# --------------------------------------------------------------------------- misuse


class UsageError(PyWrapAIError):
    """The caller used the library wrongly; fix the call, retrying will not help."""


class ConfigurationError(UsageError, ValueError):
    """A constructor argument or configuration value is invalid."""


class UnknownProviderError(ConfigurationError):
    """A provider or backend name that the library does not know."""


class MissingExtraError(UsageError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package!r} is not installed. Install it with: pip install 'pywrapai-graph[{extra}]'"
        )
        self.package = package
        self.extra = extra


class ArgumentTypeError(UsageError, TypeError):
    """An argument of the wrong type (e.g. a bare string where a list of ids is expected)."""


class InvalidArgumentError(UsageError, ValueError):
    """An argument's value is invalid: empty, out of range, malformed, or inconsistent."""


class UnknownToolError(UsageError, KeyError):
    """The model (or the caller) named a tool that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class InvalidStateError(UsageError, RuntimeError):
    """The call is not valid now (an async tool invoked inside a running loop, a server that
    is not started, a load into a non-empty index)."""


class InputNotFoundError(UsageError, FileNotFoundError):
    """A file or directory named as input does not exist."""


class EmbedderMismatchError(ConfigurationError):
    """A store filled by one embedding model was used with another (vectors would not compare).

    Either configure the model the store was built with, or clear the store and re-ingest.
    """


class UnsupportedOperationError(UsageError, NotImplementedError):
    """The backend cannot do this (a capability flag such as ``supports_delete`` says so)."""


class UnsupportedContentError(UnsupportedOperationError):
    """A message part the chosen provider cannot take (an image URL on Gemini, a PDF on
    Ollama, a GIF on Gemini): refused before any request is sent."""


class UnsafePromptNameError(UsageError, ValueError):
    """A prompt name that would leave the prompts directory (``..``, absolute, symlink out)."""


class PromptNotFoundError(UsageError, FileNotFoundError):
    """The prompts directory or the named prompt file does not exist."""


class ToolArgumentsError(UsageError, TypeError):
    """Arguments for a tool call do not match the tool's signature or schema."""

    quotes_content = True  # the rejected values


class ScopeError(UsageError, ValueError):
    """A metadata filter the retriever cannot apply, or one that contradicts a scoped view."""


class ContextWindowError(UsageError, ValueError):
    """The system prompt and the current message alone exceed the context window: no older
    turn is left to drop. Shorten the message or raise the window's ``max_tokens``."""


class StreamNotFinishedError(UsageError, RuntimeError):
    """A stream's final response was read before the stream was iterated to its end."""


# --------------------------------------------------------------------------- runtime failures


class RuntimeFailure(PyWrapAIError):
    """Something outside the caller's code failed; ``__cause__`` holds the original error."""


class ProviderError(RuntimeFailure):
    """The LLM or embedding provider failed to answer usefully."""

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None):
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class AuthenticationError(ProviderError):
    """The provider rejected the credentials (HTTP 401/403)."""


class RateLimitError(ProviderError):
    """The provider is rate limiting (HTTP 429); ``retry_after`` is in seconds when given."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code)
        self.retry_after = retry_after


class LimitWaitError(RateLimitError):
    """Our own client-side limits (``Limits``) would make this call wait longer than their
    ``max_wait_s``: it was not sent. ``retry_after`` is the wait it would have needed, when
    known. A fallback chain moves on to its next model, as on the provider's own 429."""


class ProviderTimeoutError(ProviderError, TimeoutError):
    """The request did not complete within the configured timeout."""


class BadRequestError(ProviderError):
    """The provider rejected the request as malformed (HTTP 400/404/422)."""


class ProviderUnavailableError(ProviderError):
    """The provider could not be reached or failed on its side (connection error, HTTP 5xx)."""


class IncompleteStreamError(ProviderError):
    """A streamed answer ended before the provider's end marker (``[DONE]``,
    ``message_stop``, ``done: true``, a finish reason): the text is truncated.

    Attributes:
        partial: the text received before the stream ended.
    """

    def __init__(self, message: str, *, provider: str = "", partial: str = "") -> None:
        super().__init__(message, provider=provider)
        self.partial = partial


class ResponseFormatError(RuntimeFailure, ValueError):
    """The provider's answer could not be decoded (e.g. malformed tool-call arguments).

    Attributes:
        raw: the undecodable text, kept for inspection.
    """

    #: the reply's token usage when the provider billed it but it could not be decoded
    usage: Any = None

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class StructuredOutputError(ResponseFormatError):
    """The model's structured output is not valid JSON or does not match the schema, on every
    attempt ``chat_structured(..., retries=N)`` made.

    Attributes:
        raw: the last reply.
        replies: every attempt's raw reply, in order (one per attempt).
        validation_error: the last attempt's validation errors, as sent back to the model.
    """

    def __init__(
        self, message: str, *, raw: str, replies: tuple[str, ...] = (), validation_error: str = ""
    ) -> None:
        super().__init__(message, raw=raw)
        self.replies = replies or (raw,)
        self.validation_error = validation_error


class ToolExecutionError(RuntimeFailure):
    """A tool raised an exception: its message, redacted, stands in for it.

    The tool's own exception is never passed on (its text may hold a DSN or a key, and it
    would reach spans, logs and the model): its chain is kept as a redacted copy.

    Attributes:
        tool: the tool's name.
        original_type: the qualified name of the exception the tool raised.
    """

    quotes_content = True

    def __init__(self, message: str, *, tool: str, original_type: str = "") -> None:
        super().__init__(message)
        self.tool = tool
        self.original_type = original_type


class ToolTimeoutError(ToolExecutionError, TimeoutError):
    """A tool did not return within its timeout (a sync tool's thread is abandoned,
    an async tool is cancelled).

    Attributes:
        timeout_s: the timeout that passed.
    """

    quotes_content = False

    def __init__(self, tool: str, timeout_s: float) -> None:
        super().__init__(
            f"tool {tool!r} did not finish within {timeout_s:g} s (its timeout); make it "
            "faster, or raise timeout_s= on @tool or tool_timeout_s= on AgentConfig",
            tool=tool,
        )
        self.timeout_s = timeout_s


class ToolResultTooLargeError(ToolExecutionError):
    """A tool's result, as the text the model would receive, is over its size limit.

    Attributes:
        size: the result's size in UTF-8 bytes (at least this much).
        limit: the limit it exceeded.
    """

    quotes_content = False

    def __init__(self, tool: str, size: int, limit: int) -> None:
        super().__init__(
            f"tool {tool!r} returned {size:,} bytes or more, over its limit of {limit:,}; "
            "return less (a summary, the first rows), or raise max_result_bytes= on @tool "
            "or max_tool_result_bytes= on AgentConfig",
            tool=tool,
        )
        self.size = size
        self.limit = limit


class RemoteToolError(ToolExecutionError):
    """A tool on a tool server (an MCP server) ran and reported a failure, or the server
    refused the call: the server's message, redacted, is the error's text.

    Attributes:
        tool: the tool's name as the model calls it.
        server: the name of the server it ran on.
    """

    def __init__(self, message: str, *, tool: str, server: str) -> None:
        super().__init__(message, tool=tool)
        self.server = server


class ToolServerError(ToolExecutionError):
    """A tool server (an MCP server) could not be started or reached, or went away during a
    call (its process exited, its HTTP endpoint stopped answering, it broke the protocol).

    A call it interrupted may or may not have run on the server.

    Attributes:
        server: the server's configured name.
        tool: the tool being called, or "" when the server failed while connecting.
    """

    quotes_content = False

    def __init__(self, message: str, *, server: str, tool: str = "") -> None:
        super().__init__(message, tool=tool)
        self.server = server


class VectorStoreError(RuntimeFailure):
    """A vector-store backend failed (connection lost, corrupt file, engine error)."""


class StorageFullError(VectorStoreError):
    """The disk (or quota) holding a store is full; nothing of the failed write was kept.

    Attributes:
        path: where the store lives.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class StoreBusyError(VectorStoreError):
    """The store could not be had in time: another process held its write lock, or every
    pooled server connection stayed in use past the pool's deadline (the message says which
    and what to check). Nothing was done; the call may be retried later."""


class StoreDamagedError(VectorStoreError):
    """A store's files were found damaged when it opened (a file cut short, zeroed or
    missing): nothing was served from them. The message names the folder and what to do."""


class StoreTimeoutError(VectorStoreError, TimeoutError):
    """The store's server did not answer a call within its deadline (the server cancelled
    the statement, or the client gave up on a server that stopped answering and closed the
    connection). A read did nothing; a write that timed out may or may not have been applied
    (the store's writes are idempotent: retry it)."""


class OverloadedError(RuntimeFailure):
    """More calls are already waiting for the offload pool than it accepts: this one was
    refused at once rather than queued (load shedding). Retry later, or raise
    ``PYWRAPAI_OFFLOAD_QUEUE``."""
