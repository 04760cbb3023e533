"""Optional imports: an SDK or driver that is missing raises an error naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from pywrapai_graph.errors import MissingExtraError

__all__ = ["require"]


def require(module: str, extra: str, package: str | None = None) -> ModuleType:
    """Import an optional SDK, or raise MissingExtraError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(package or module, extra) from exc
