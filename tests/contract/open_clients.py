"""LLM clients a test opened, closed after it by ``conftest.close_opened_clients``."""

from __future__ import annotations

from pywrapai import LLM

__all__ = ["OPENED", "opened"]

OPENED: list[LLM] = []


def opened(llm: LLM) -> LLM:
    """``llm``, closed after the test."""
    OPENED.append(llm)
    return llm
