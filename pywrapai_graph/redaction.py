"""Secret redaction for every boundary: messages, reprs, CLI output and exception chains.

Standard library only, so every layer may import it (like :mod:`pywrapai_graph.errors`).

What is masked (replaced by ``***``):

* passwords in URL userinfo, ``scheme://user:***@host`` (the user name stays), and a bare
  userinfo without a password, ``https://***@host`` (where a token usually sits);
* secret-named parameters wherever they appear: URL query parameters
  (``?password=``, ``&token=``, ``api_key=``...), libpq key=value DSNs
  (``host=db password='p w'``, the value running to the next space), environment-style
  assignments (``OPENAI_API_KEY=``, ``PGPASSWORD=``, ``GITHUB_TOKEN=``...), ``key: value``
  pairs (to the end of the line) and HTTP ``Authorization`` values;
* anything shaped like a credential, wherever it stands (:data:`_TOKEN_SHAPES`): LLM
  provider keys (``sk-...``, ``sk-ant-...``), cloud keys (AWS ``AKIA``/``ASIA`` key ids and
  session tokens, Google ``AIza`` keys, ``ya29.`` OAuth tokens and ``GOCSPX-`` client
  secrets, Azure AD client secrets and storage ``AccountKey=``/``SharedAccessKey=`` values,
  Bedrock API keys, ``api-key``/``Ocp-Apim-Subscription-Key`` and ``X-Amz-Security-Token``
  headers), VCS tokens
  (GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``/``github_pat_``, GitLab ``glpat-``
  and its kin), chat tokens (Slack ``xoxb-``/``xoxp-``/``xapp-`` and webhook URLs, Discord
  and Telegram bot tokens), package-registry and payment keys (npm, PyPI, Stripe,
  SendGrid, Hugging Face, Twilio), JSON Web Tokens, and private-key blocks (PEM ``-----BEGIN
  ... PRIVATE KEY-----`` to its end, or to the end of the text when cut; PuTTY's
  ``Private-Lines``);
* the exact secrets a caller names (and their percent-encoded forms).

:func:`scrubbed` turns an exception chain into a copy that carries only redacted
messages, for use as the ``__cause__`` of the errors we raise from SDK and driver errors:
the original (whose request, headers or message may hold a key) is never the visible cause,
so ``logging.exception`` and ``traceback.format_exception`` print nothing secret.

:func:`unencoded_userinfo` tells a URL whose password holds an unencoded reserved character
(``@ : / ? # [ ]``): parsers disagree where its host starts (libpq takes the text after the
first ``@``), so such a URL would send the password's tail to DNS and show it as the host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

__all__ = ["MASK", "RedactedError", "bare_url", "redact", "scrubbed", "unencoded_userinfo"]

MASK = "***"

# Names whose value is a secret after ``=`` (URL query parameters, libpq key=value DSNs).
_ASSIGNED = (
    "password|passwd|pwd|sslpassword|secret|client_secret|token|access_token|refresh_token|"
    "auth_token|id_token|session_token|api_key|apikey|api-key|x-api-key|x-goog-api-key|key|"
    "private_key|private_key_id|credential|credentials|auth|sig|signature|"
    "secret_access_key|secretaccesskey|accountkey|sharedaccesskey|x-amz-security-token|"
    "ocp-apim-subscription-key"
)
# The subset still unambiguous after ``:`` (headers, YAML); quoted JSON names take all.
_LABELLED = (
    "password|passwd|sslpassword|secret|client_secret|access_token|refresh_token|auth_token|"
    "api_key|apikey|api-key|x-api-key|x-goog-api-key|private_key|private_key_id|authorization|"
    "proxy-authorization|x-auth-token|secret_access_key|secretaccesskey|x-amz-security-token|"
    "ocp-apim-subscription-key"
)
# Environment-style names: a secret word after a prefix (``OPENAI_API_KEY``, ``PGPASSWORD``).
_ENV = (
    r"[A-Za-z0-9_]*(?:password|passwd)|(?:[A-Za-z0-9]+_)+"
    r"(?:api_?key|token|secret|secret_key|access_key|private_key|pwd|pass|credentials?)"
)
_QUOTED = r"'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?"
# Values: 'quoted' (libpq escapes \'), "quoted", or a bare run: to the next space after ``=``
# (a libpq password may hold any of ``@:/?#[]&``), to the next ``&`` as well in a URL query
# (an unencoded ``#`` is masked with it), to the end of the line after ``:``.
_VALUE = rf"(?P<value>{_QUOTED}|[^\s'\"]\S*)"
_QUERY_VALUE = rf"(?P<value>{_QUOTED}|[^\s&'\"]+)"
_LINE_VALUE = rf"(?P<value>{_QUOTED}|[^\s'\"][^\r\n]*)"
_NOT_GLUED = r"(?<![\w\-])"  # ``max_tokens=5`` stays readable
_NOT_IN_QUERY = r"(?<![\w\-?&;])"
_NAMED = (
    re.compile(rf"(?<=[?&;])(?P<name>{_ASSIGNED})(?P<sep>=){_QUERY_VALUE}", re.IGNORECASE),
    re.compile(rf"{_NOT_IN_QUERY}(?P<name>{_ASSIGNED}|{_ENV})(?P<sep>\s*=\s*){_VALUE}", re.I),
    re.compile(rf"{_NOT_GLUED}(?P<name>{_LABELLED}|{_ENV})(?P<sep>\s*:\s*){_LINE_VALUE}", re.I),
    re.compile(
        rf"(?P<name>([\"'])(?:{_ASSIGNED}|{_ENV})\2)(?P<sep>\s*:\s*){_VALUE}", re.IGNORECASE
    ),
)
# scheme://user:password@ — greedy up to the last @ of the token (a password may hold '@').
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"?#]*:)[^\s'\"]*@")
# scheme://TOKEN@ — a userinfo without a password is masked whole.
_BARE_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://)[^\s:/@'\"?#\[\]*]+@")
_SCHEMES = re.compile(r"\b(?P<scheme>Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=\-]{4,}", re.IGNORECASE)
# Credentials recognisable by their shape alone. The shapes are the documented token
# formats, as the detectors of Yelp's detect-secrets and of gitleaks know them; each stands
# alone (not glued to a longer word) and is long enough not to hit ordinary text.
_TOKEN_SHAPES = re.compile(
    # one lookbehind for all: tried once per position, so only word starts try the shapes
    r"(?<![\w\-])(?:"
    + "|".join(
        shape
        for shape in (
            r"sk-[A-Za-z0-9_\-*]{6,}",  # OpenAI, Anthropic (sk-ant-), DeepSeek...
            r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # AWS key ids
            r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/=]{20,}",  # AWS session tokens
            r"(?:ABSK|bedrock-api-key-)[A-Za-z0-9+/=]{20,}",  # Amazon Bedrock API keys
            r"AIza[0-9A-Za-z_\-]{10,}",  # Google API keys
            r"ya29\.[0-9A-Za-z_\-.]{10,}",  # Google OAuth access tokens
            r"GOCSPX-[0-9A-Za-z_\-]{10,}",  # Google OAuth client secrets
            r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,40}",  # Azure AD client secrets
            r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{20,}",  # GitHub tokens
            r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained tokens
            r"(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas)-[A-Za-z0-9_\-]{20,}",
            r"GR1348941[A-Za-z0-9_\-]{20,}",  # GitLab runner registration tokens
            r"xox[abposre]-[A-Za-z0-9\-]{10,}",  # Slack tokens
            r"xapp-\d-[A-Za-z0-9\-]{10,}",  # Slack app-level tokens
            r"(?<=hooks\.slack\.com/services/)[A-Za-z0-9_/]{10,}",  # Slack webhooks
            r"[MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,}",  # Discord bots
            r"(?:bot)?\d{8,10}:[0-9A-Za-z_\-]{35}(?![\w\-])",  # Telegram bots
            r"npm_[A-Za-z0-9]{36}",
            r"pypi-AgE[A-Za-z0-9_\-]{50,}",
            r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
            r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
            r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
            r"SK[0-9a-fA-F]{32}(?![\w\-])",  # Twilio API keys
            r"eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*",  # JSON Web Tokens
        )
    )
    + ")"
)
# A PEM private key from BEGIN to END (any kind: RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK),
# across real or escaped newlines, or to the end of the text when the block is cut short;
# PuTTY's key lines.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|(?<=Private-Lines: )\d+(?:\s+[A-Za-z0-9+/=]+)+",
    re.DOTALL,
)
_URL = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*://(?P<rest>\S*)")
_RESERVED = frozenset("@:/?#[]")
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")
_PORT_THEN_PATH = re.compile(r"[0-9]*[/?#]")  # host:8000/path?mail=a@b: the '@' is no userinfo


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
    text = _PRIVATE_KEY.sub(MASK, text)
    text = _USERINFO.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _BARE_USERINFO.sub(lambda m: f"{m['head']}{MASK}@", text)
    text = _SCHEMES.sub(lambda m: f"{m['scheme']} {MASK}", text)
    for pattern in _NAMED:
        text = pattern.sub(_named, text)
    return _TOKEN_SHAPES.sub(MASK, text)


def bare_url(url: str) -> str:
    """``url`` as a trace may keep it: scheme, host and path, without its userinfo
    (``user:password@``), its query (which may sign it) and its fragment (which may carry a
    token, as OAuth's implicit flow does), the rest redacted."""
    scheme, sep, rest = url.partition("://")
    rest = _QUERY_OR_FRAGMENT.split(rest, 1)[0]
    authority, slash, path = rest.partition("/")
    return redact(f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}")


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


def unencoded_userinfo(url: str) -> bool:
    """Whether the userinfo of ``url`` holds an unencoded reserved character (``@:/?#[]``
    in the password, ``@`` in the user name), so that parsers disagree on its host.

    An ``@`` that belongs to a path or query (its "user name" would hold ``/?#[]``, or a
    port sits before the path) is not userinfo; a URL without ``scheme://`` has none.
    """
    match = _URL.match(url)
    if match is None:
        return False
    rest = match["rest"]
    at = rest.rfind("@")
    if at < 0:
        return False
    user, _, password = rest[:at].partition(":")
    if any(c in _RESERVED for c in user.replace("@", "")) or _PORT_THEN_PATH.match(password):
        return False
    return "@" in user or any(c in _RESERVED for c in password)
