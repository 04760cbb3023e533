""" "Cannot reach" messages: which host and port, why (DNS, refused, timeout, TLS, auth), what next.

Every adapter that talks to a server (the four providers, Qdrant, Chroma, PostgreSQL) words
its connection failures here, so they read alike::

    cannot reach Qdrant at nonexistent.invalid:6333: the host name does not resolve (DNS):
    [Errno -2] Name or service not known. Check the host name for typos ...

The address is rebuilt from the host and port alone, so URL credentials never appear; the
underlying error's text is redacted as well.
"""

from __future__ import annotations

import re
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import urlsplit

from pywrapai_graph.errors import ConfigurationError
from pywrapai_graph.redaction import redact, unencoded_userinfo

__all__ = [
    "Reason",
    "address",
    "cannot_reach",
    "endpoint_of",
    "probe",
    "reason_of",
    "refuse_unencoded_userinfo",
]

Reason = Literal["dns", "refused", "timeout", "tls", "auth", "other"]

_WORDING: dict[Reason, tuple[str, str]] = {
    "dns": (
        "the host name does not resolve (DNS)",
        "Check the host name for typos and that it resolves from this machine (a Docker "
        "Compose service name resolves only inside that network)",
    ),
    "refused": (
        "the connection was refused",
        "Check that the server is running and listens on that host and port",
    ),
    "timeout": (
        "the connection timed out",
        "Check that the host and port are the server's and that no firewall or proxy drops "
        "the traffic, or raise the timeout",
    ),
    "tls": (
        "the TLS handshake failed",
        "Check the scheme: https:// (or sslmode=require) needs a server that speaks TLS with "
        "a certificate this machine trusts; use http:// (or sslmode=disable) for a plain one",
    ),
    "auth": (
        "the server rejected the credentials",
        "Check the API key, or the user name and password",
    ),
    "other": ("the connection failed", "Check the address and the server's logs"),
}
_DNS = re.compile(
    r"name or service not known|nodename nor servname|no address associated|"
    r"temporary failure in name resolution|could not translate host name|getaddrinfo failed|"
    r"name resolution",
    re.IGNORECASE,
)
_TLS = re.compile(r"\bssl\b|\btls\b|certificate|wrong version number|handshake", re.IGNORECASE)
_REFUSED = re.compile(r"connection refused|errno 111\b|actively refused", re.IGNORECASE)
_TIMEOUT = re.compile(r"timed out|timeout expired|\btimeout\b", re.IGNORECASE)
_AUTH = re.compile(
    r"password authentication failed|authentication failed|unauthori[sz]ed|forbidden|"
    r"invalid api key|incorrect api key",
    re.IGNORECASE,
)
_DEFAULT_PORTS = {"http": 80, "https": 443, "postgresql": 5432, "postgres": 5432}


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception behind it: causes, contexts, and wrapped ones
    (``URLError.reason``, Qdrant's ``ResponseHandlingException.source``)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 32:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for nxt in (
            current.__cause__,
            current.__context__,
            getattr(current, "reason", None),
            getattr(current, "source", None),
            *current.args,
        ):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "status", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


def reason_of(exc: BaseException) -> Reason:
    """Why a connection failed, from the exception chain."""
    errors = list(chain(exc))
    texts = " | ".join(_text(e) for e in errors)
    if any(_status(e) in (401, 403) for e in errors) or _AUTH.search(texts):
        return "auth"
    if any(isinstance(e, socket.gaierror) for e in errors) or _DNS.search(texts):
        return "dns"
    if any(isinstance(e, ssl.SSLError) for e in errors) or _TLS.search(texts):
        return "tls"
    if any(isinstance(e, ConnectionRefusedError) for e in errors) or _REFUSED.search(texts):
        return "refused"
    if any(
        isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in errors
    ) or _TIMEOUT.search(texts):
        return "timeout"
    return "other"


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return type(exc).__name__


def address(url_or_host: str, default_port: int | None = None) -> str:
    """``host:port`` of a URL or ``host[:port]`` — never its user name or password.

    Without a port in the text: ``default_port`` (the client's), else the scheme's.
    """
    text = url_or_host if "://" in url_or_host else f"//{url_or_host}"
    if unencoded_userinfo(text):
        return "<an address whose password is not percent-encoded>"
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "<unparsable address>"
    if not host:
        return "<no host>"
    port = port or default_port or _DEFAULT_PORTS.get(parts.scheme)
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


def endpoint_of(exc: BaseException) -> str | None:
    """``host:port`` of the HTTP request behind an SDK or httpx error, when it is known."""
    for error in chain(exc):
        for holder in (error, getattr(error, "response", None)):
            try:
                request: Any = getattr(holder, "request", None)
            except RuntimeError:  # httpx raises when an error carries no request
                continue
            url = getattr(request, "url", None)
            if url is not None:
                return address(str(url))
    return None


def cannot_reach(
    service: str, where: str, exc: BaseException, *, reason: Reason | None = None
) -> str:
    """The message for a failed connection to ``service`` at ``where`` (``host:port``)."""
    why = reason or reason_of(exc)
    summary, advice = _WORDING[why]
    innermost = list(chain(exc))[-1]
    detail = redact(" ".join(_text(innermost).split()))[:300]
    detail = f": {detail}" if detail else ""
    return f"cannot reach {service} at {where}: {summary}{detail}. {advice}."


def probe(url: str, timeout: float) -> None:
    """GET ``url`` once, so an unreachable server fails fast and clearly (for clients that
    would otherwise wait forever). Any HTTP answer but 401/403 counts as reachable.

    Raises:
        OSError: DNS, refused, timeout, TLS (``urllib.error.URLError``), or HTTP 401/403.
    """
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (401, 403):
            raise


def refuse_unencoded_userinfo(url: object, what: str) -> None:
    """Refuse a URL whose password holds an unencoded ``@ : / ? # [ ]``.

    Parsers disagree on where its host starts (libpq takes the text after the first ``@``):
    the password's tail would be looked up in DNS and shown as the host.

    Raises:
        ConfigurationError: naming ``what`` (never the URL) and the encoding to use.
    """
    if isinstance(url, str) and unencoded_userinfo(url):
        raise ConfigurationError(
            f"the {what} has a user name or password with an unencoded reserved character "
            "(one of @ : / ? # [ ]), so its host cannot be told apart from the password; "
            "percent-encode them in the URL (@ as %40, : as %3A, / as %2F, ? as %3F, "
            "# as %23, [ as %5B, ] as %5D), e.g. with urllib.parse.quote(password, safe='')"
        )
