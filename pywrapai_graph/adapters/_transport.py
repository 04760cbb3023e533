"""The timeout and transport exception types of the HTTP stacks that SDKs let through raw."""

from __future__ import annotations

import importlib

__all__ = ["http_errors"]


def http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeout exception types, transport exception types) of the HTTP stacks installed.

    SDKs raise them raw: ``httpx`` (ollama), its fork ``httpx2`` (recent google-genai), or
    ``aiohttp`` (google-genai's async transport when aiohttp is installed).
    """
    timeouts: list[type[Exception]] = [TimeoutError]
    transports: list[type[Exception]] = [ConnectionError]
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transports.append(module.TransportError)
    try:
        aiohttp = importlib.import_module("aiohttp")
    except ImportError:
        pass
    else:
        transports.append(aiohttp.ClientError)
    return tuple(timeouts), tuple(transports)
