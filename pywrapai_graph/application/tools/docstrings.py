"""Reads a tool's description and parameter descriptions from its docstring.

Understands the three common styles:

* Google: an ``Args:`` / ``Arguments:`` / ``Parameters:`` section, ``name (type): text``.
* NumPy: a ``Parameters`` heading underlined with dashes, ``name : type`` then indented text.
* Sphinx: ``:param name: text`` (or ``:param type name: text``) fields.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_GOOGLE_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SECTION_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*(:.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    """The summary line and the per-parameter descriptions."""

    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Parse ``doc``; unknown layouts just give the summary line."""
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    summary = lines[0].strip() if lines else ""
    params = _google(lines) or _numpy(lines) or _sphinx(lines)
    return ParsedDocstring(summary, params)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    in_section = False
    section_indent = 0
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if _GOOGLE_HEADER.match(stripped):
            in_section, section_indent, current = True, _indent(line), None
            continue
        if not in_section:
            continue
        if stripped and _indent(line) <= section_indent and _SECTION_HEADER.match(stripped):
            in_section = False
            continue
        item = _GOOGLE_ITEM.match(stripped)
        if item and stripped and _indent(line) <= section_indent + 4:
            current = item.group(1).lstrip("*")
            params[current] = item.group(3).strip()
        elif current and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return params


def _is_underline(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {"-"}


def _numpy(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    starts = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip() in ("Parameters", "Arguments") and _is_underline(lines[i + 1])
    ]
    if not starts:
        return params
    base = _indent(lines[starts[0]])
    current: str | None = None
    body = lines[starts[0] + 2 :]
    for j, line in enumerate(body):
        stripped = line.strip()
        if not stripped:
            continue
        if j + 1 < len(body) and _is_underline(body[j + 1]):
            break  # the next section ("Returns", ...) begins
        if _indent(line) <= base:
            item = _NUMPY_ITEM.match(stripped)
            if item is None:
                break
            current = item.group(1)
            params[current] = ""
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params


def _sphinx(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        m = _SPHINX_PARAM.match(stripped)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif stripped.startswith(":"):
            current = None
        elif current and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return params
