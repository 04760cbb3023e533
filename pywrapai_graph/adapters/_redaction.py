"""Redaction: secrets and anything key-shaped never reach an error message or a log."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["redact"]

# Anything shaped like an API key (OpenAI "sk-...", Anthropic "sk-ant-...", Google "AIza...").
_KEY_SHAPES = re.compile(r"(sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,})")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with known secrets and anything key-shaped replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)
