"""Secret redaction for every boundary: messages, reprs, CLI output and exception chains.

Standard library only, so every layer may import it (like :mod:`pywrapai_graph.errors`).

What is masked (replaced by ``***``):

* passwords in URL userinfo, ``scheme://user:***@host`` (the user name stays);
* secret-named parameters wherever they appear: URL query parameters
  (``?password=``, ``&token=``, ``api_key=``...), libpq key=value DSNs
  (``host=db password='p w'``), ``key: value`` pairs and HTTP ``Authorization`` values;
* anything shaped like a provider API key (``sk-...``, ``sk-ant-...``, ``AIza...``);
* the exact secrets a caller names (and their percent-encoded forms).

:func:`scrubbed` turns an exception chain into a copy that carries only redacted
messages, for use as the ``__cause__`` of the errors we raise from SDK and driver errors:
the original (whose request, headers or message may hold a key) is never the visible cause,
so ``logging.exception`` and ``traceback.format_exception`` print nothing secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

__all__ = ["MASK", "RedactedError", "redact", "scrubbed"]

MASK = "***"

# Names whose value is a secret after ``=`` (URL query parameters, libpq key=value DSNs).
_ASSIGNED = (
    "password|passwd|pwd|sslpassword|secret|client_secret|token|access_token|refresh_token|"
    "auth_token|id_token|session_token|api_key|apikey|api-key|x-api-key|x-goog-api-key|key|"
    "private_key|credential|credentials|auth|sig|signature"
)
# The subset still unambiguous after ``:`` (headers, YAML); quoted JSON names take all.
_LABELLED = (
    "password|passwd|sslpassword|secret|client_secret|access_token|refresh_token|auth_token|"
    "api_key|apikey|api-key|x-api-key|x-goog-api-key|private_key|authorization"
)
# Values: 'quoted' (libpq escapes \'), "quoted", or a bare run up to a separator.
_VALUE = r"(?P<value>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s&;,'\")}\]]+)"
_NOT_GLUED = r"(?<![\w\-])"  # ``max_tokens=5`` stays readable
_NAMED = (
    re.compile(rf"{_NOT_GLUED}(?P<name>{_ASSIGNED})(?P<sep>\s*=\s*){_VALUE}", re.IGNORECASE),
    re.compile(rf"{_NOT_GLUED}(?P<name>{_LABELLED})(?P<sep>\s*:\s*){_VALUE}", re.IGNORECASE),
    re.compile(rf"(?P<name>([\"'])(?:{_ASSIGNED})\2)(?P<sep>\s*:\s*){_VALUE}", re.IGNORECASE),
)
# scheme://user:password@ — greedy up to the last @ of the token (a password may hold '@').
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"?#]*:)[^\s'\"]*@")
_SCHEMES = re.compile(r"\b(?P<scheme>Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=\-]{4,}", re.IGNORECASE)
# OpenAI "sk-...", Anthropic "sk-ant-...", Google "AIza...".
_KEY_SHAPES = re.compile(r"(sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,})")


def _named(match: re.Match[str]) -> str:
    value = match["value"]
    quote_char = value[0] if value[:1] in ("'", '"') else ""
    return f"{match['name']}{match['sep']}{quote_char}{MASK}{quote_char}"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with secrets replaced by ``***``.

    Args:
        text: any message, URL, DSN or repr.
        secrets: exact values to mask as well (an API key, a whole DSN); values shorter
            than 4 characters are ignored, as masking them would mangle ordinary text.
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
            encoded = quote(secret, safe="")
            if encoded != secret:
                text = text.replace(encoded, MASK)
    text = _USERINFO.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _SCHEMES.sub(lambda m: f"{m['scheme']} {MASK}", text)
    for pattern in _NAMED:
        text = pattern.sub(_named, text)
    return _KEY_SHAPES.sub(MASK, text)


class RedactedError(Exception):
    """A redacted stand-in for a third-party exception, used as a ``__cause__``.

    Attributes:
        original_type: the qualified name of the exception it stands for.
    """

    def __init__(self, original_type: str, message: str) -> None:
        super().__init__(f"{original_type}: {message}" if message else original_type)
        self.original_type = original_type


def scrubbed(exc: BaseException, secrets: Iterable[str | None] = ()) -> RedactedError:
    """A copy of ``exc`` and the chain behind it, messages redacted, no other state.

    Raise our error ``from scrubbed(exc, [key])``: the traceback then shows the original's
    type and (redacted) message, never its arguments, request or headers, and the original's
    implicit context is suppressed.
    """
    keys = [s for s in secrets if s]
    seen: set[int] = set()
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(chain) < 16:
        seen.add(id(current))
        chain.append(current)
        nxt = current.__cause__
        if nxt is None and not current.__suppress_context__:
            nxt = current.__context__
        current = nxt
    copy: RedactedError | None = None
    for original in reversed(chain):
        kind = type(original)
        name = f"{kind.__module__}.{kind.__qualname__}"
        try:
            message = str(original)
        except Exception:  # a broken __str__ must not hide the real failure
            message = ""
        newer = RedactedError(name, redact(message, keys))
        newer.__cause__ = copy
        copy = newer
    assert copy is not None
    return copy
